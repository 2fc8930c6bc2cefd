//! The hostile world's tools for the suites of `tests/it/hostile/` (and the few elsewhere that
//! build against a hostile release): the world with its configuration, runs with a deadline and
//! their peak memory, and tarballs written header by header as a hostile release would ship them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cks_iso_testworld::world::{Options, World};

/// A started world with its configuration (and trust root) written into `dir`.
pub fn world_in(dir: &Path) -> (World, PathBuf) {
    let world = World::start(Options::default());
    let config = dir.join("config.yaml");
    fs::write(&config, world.config_yaml()).unwrap();
    // The configuration names the world's trust root relative to itself.
    fs::copy(world.trusted_root_path(), dir.join("trusted_root.json")).unwrap();
    (world, config)
}

/// `cks-iso build --no-progress` with `config`, TMPDIR under `dir` and `args`.
pub fn build(config: &Path, dir: &Path, args: &[&str]) -> Command {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut cmd = super::build_in(config, &tmp);
    cmd.arg("--no-progress").args(args);
    cmd
}

/// Every file under `dir`, recursively, relative to it.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = fs::read_dir(&at) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => stack.push(path),
                false => found.push(path.strip_prefix(dir).unwrap().display().to_string()),
            }
        }
    }
    found.sort();
    found
}

/// The world's amd64 build arguments with the dashboard at `dashboard`.
pub fn world_args<'a>(world: &'a World, dashboard: &'a str) -> Vec<&'a str> {
    vec![
        "--kubernetes",
        world.kubernetes(),
        "--arch",
        "amd64",
        "--network",
        world.network_url(),
        "--dashboard",
        dashboard,
    ]
}

/// A tar member as a hostile release would ship it: any name, any type, any link target.
pub struct Member {
    pub name: &'static str,
    /// `b'0'` file, `b'1'` hard link, `b'2'` symbolic link, `b'5'` directory.
    pub kind: u8,
    pub link: &'static str,
}

/// A gzip tarball of `members` (files get a small ELF-like body), written header by header so
/// that names no tar library would write (absolute, `..`) can be written.
pub fn hostile_tgz(members: &[Member]) -> Vec<u8> {
    use std::io::Write;
    let mut tar = Vec::new();
    for m in members {
        let body: &[u8] = if m.kind == b'0' {
            b"\x7fELF\x02\x01\x01 hostile"
        } else {
            b""
        };
        let mut h = [0u8; 512];
        h[..m.name.len()].copy_from_slice(m.name.as_bytes());
        let octal = |h: &mut [u8; 512], at: usize, len: usize, v: u64| {
            let s = format!("{v:0w$o}\0", w = len - 1);
            h[at..at + len].copy_from_slice(s.as_bytes());
        };
        octal(&mut h, 100, 8, 0o755);
        octal(&mut h, 108, 8, 0);
        octal(&mut h, 116, 8, 0);
        octal(&mut h, 124, 12, body.len() as u64);
        octal(&mut h, 136, 12, 1_700_000_000);
        h[156] = m.kind;
        h[157..157 + m.link.len()].copy_from_slice(m.link.as_bytes());
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
        let s = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(s.as_bytes());
        tar.extend_from_slice(&h);
        tar.extend_from_slice(body);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.resize(tar.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

pub fn file(name: &'static str) -> Member {
    Member {
        name,
        kind: b'0',
        link: "",
    }
}

pub fn link(name: &'static str, kind: u8, link: &'static str) -> Member {
    Member { name, kind, link }
}

/// Serves `body` as the world's `path` with a matching published checksum.
pub fn publish(world: &World, path: &str, body: &[u8]) {
    let name = path.rsplit('/').next().unwrap();
    let sum = cks_iso_testworld::upstream::sha256_hex(body);
    world.upstream().put(
        &format!("{path}.sha256"),
        format!("{sum}  {name}\n"),
        "text/plain",
    );
    world
        .upstream()
        .put(path, body.to_vec(), "application/octet-stream");
}

/// Runs `cmd`, killing it after `secs`; `None` if it had to be killed.
pub fn output_within(cmd: &mut Command, secs: u64) -> Option<Output> {
    output_within_rss(cmd, secs).map(|(out, _)| out)
}

/// [`output_within`], with the child's peak resident set size in bytes, as GNU time measures it.
///
/// Not `ru_maxrss` from our own `wait4`: Linux keeps the high-water mark of the address space a
/// process leaves at `exec`, and a child spawned from this test binary leaves a copy of it (or,
/// by vfork, the binary's own), so the child's figure would be at least this whole test process's
/// peak, hundreds of MiB when the suite runs together. `/usr/bin/time` (`make deps`) forks the
/// command from its own small image and reports that child's rusage alone. The command runs in a
/// process group of its own, killed whole at the deadline.
pub fn output_within_rss(cmd: &mut Command, secs: u64) -> Option<(Output, u64)> {
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Stdio;
    let time = Path::new("/usr/bin/time");
    assert!(
        time.is_file(),
        "/usr/bin/time (GNU time) is missing: run make deps"
    );
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut timed = Command::new(time);
    timed
        .args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    // Reaped by `wait4` below, which `Child::wait` cannot do without blocking.
    #[allow(clippy::zombie_processes)]
    let mut child = timed
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let mut status = 0;
        // SAFETY: a plain out-parameter; the child is ours and reaped only here.
        let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if reaped == pid {
            let out = Output {
                status: std::process::ExitStatus::from_raw(status),
                stdout: stdout.join().unwrap(),
                stderr: stderr.join().unwrap(),
            };
            let kib = fs::read_to_string(report.path()).unwrap_or_default();
            // GNU time writes "Command exited with non-zero status N" before the figure then.
            let kib: u64 = kib
                .lines()
                .last()
                .and_then(|l| l.trim().parse().ok())
                .unwrap_or_else(|| panic!("GNU time reported no peak RSS: {kib:?}"));
            return Some((out, kib * 1024));
        }
        assert_eq!(reaped, 0, "waitpid: {}", std::io::Error::last_os_error());
        if std::time::Instant::now() >= deadline {
            // SAFETY: signals the process group this function created; no memory is involved.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Bytes of every file under `dir`.
pub fn bytes_under(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .map(|f| fs::metadata(dir.join(f)).map_or(0, |m| m.len()))
        .sum()
}

/// The world's configuration with `from` (a server's base URL) replaced by `to`, in `dir`.
pub fn config_via(world: &World, dir: &Path, from: &str, to: &str) -> PathBuf {
    let config = dir.join("via.yaml");
    let from_host = from.trim_start_matches("http://");
    let to_host = to.trim_start_matches("http://");
    let yaml = world
        .config_yaml()
        .replace(from, to)
        .replace(from_host, to_host);
    fs::write(&config, yaml).unwrap();
    config
}
