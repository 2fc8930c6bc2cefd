//! Progress on stderr (STYLE.md, "Streams"): the files phase of a build (binaries and tarballs,
//! fetched one by one) reports like the image pulls — a plain line every few seconds when
//! stderr is no terminal, a spinner with a count on one — and log lines are printed above the
//! bars, never over them. The downloads are slowed by the fault proxy's trickle, so the phase
//! lasts longer than a progress interval, as real binaries on a slow link do.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::world::World;

use crate::support::hostile::{world_args, world_in};
use crate::support::*;

/// The world with its release downloads (which dl.k8s.io redirects to its CDN) going through
/// `proxy`, whose rule trickles the amd64 kubelet (16 KiB in the world) for about 10 s: longer
/// than one plain-line interval.
fn slowed(dir: &Path) -> (World, FaultProxy, std::path::PathBuf) {
    let (world, config) = world_in(dir);
    let proxy = FaultProxy::start(&world.upstream().cdn_url());
    world.upstream().redirect_cdn_to(&proxy.url());
    proxy.add(
        Rule::path_regex(r"amd64/kubelet(\?|$)").fault(Fault::Trickle {
            chunk: 1024,
            pause: Duration::from_millis(600),
        }),
    );
    (world, proxy, config)
}

#[test]
fn the_files_phase_prints_a_plain_progress_line_when_stderr_is_no_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, proxy, config) = slowed(d);
    let mut args = world_args(&world, world.dashboard_url());
    let (out, cache, tmp) = (d.join("out"), d.join("cache"), d.join("tmp"));
    fs::create_dir_all(&tmp).unwrap();
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    let built = ok(build_in(&config, &tmp).args(&args).output().unwrap());
    let err = stderr(&built);
    let log: Vec<String> = proxy.log().iter().map(|r| r.path.clone()).collect();
    assert!(
        proxy.log().iter().any(|r| r.fault.is_some()),
        "the kubelet was trickled: {log:?}"
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("downloading files: ") && l.ends_with(" so far"))
        .collect();
    let trickled: Vec<String> = proxy
        .log()
        .iter()
        .filter(|r| r.path.ends_with("amd64/kubelet"))
        .map(|r| {
            format!(
                "{} {} {}",
                r.method,
                r.path,
                r.fault.as_deref().unwrap_or_default()
            )
        })
        .collect();
    assert!(
        !lines.is_empty(),
        "no plain progress line ({trickled:?}):\n{err}"
    );
    // `downloading files: 4 done, 1.23 MiB so far`: a count and a size in binary units.
    assert!(plain_line(lines[0]), "{lines:?}");
    assert!(!err.contains('\r'), "no bar drawing in a log:\n{err}");
}

/// `downloading files: <n> done, <size> so far`, size as indicatif's HumanBytes writes it.
fn plain_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("downloading files: ") else {
        return false;
    };
    let Some((count, rest)) = rest.split_once(" done, ") else {
        return false;
    };
    let Some(size) = rest.strip_suffix(" so far") else {
        return false;
    };
    let units = [" B", " KiB", " MiB", " GiB"];
    count.parse::<u64>().is_ok()
        && units.iter().any(|u| {
            size.strip_suffix(u)
                .is_some_and(|n| n.parse::<f64>().is_ok())
        })
}

/// `text` as one word for `sh -c`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn log_lines_are_printed_above_the_bars_in_a_terminal() {
    require("script");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, _proxy, config) = slowed(d);
    let mut args = world_args(&world, world.dashboard_url());
    let (out, cache, tmp) = (d.join("out"), d.join("cache"), d.join("tmp"));
    fs::create_dir_all(&tmp).unwrap();
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    // The same command, run by script(1) on a pseudo-terminal, its bytes captured as written.
    let cmd = build_in(&config, &tmp);
    let line = std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .chain(args.iter().map(|a| (*a).to_owned()))
        .map(|a| quoted(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let typescript = d.join("typescript");
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &format!("{line} 2>&1"), p(&typescript)])
        .env("TERM", "xterm")
        .env("COLUMNS", "120");
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    let ran = script.output().unwrap();
    let raw = fs::read(&typescript).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        ran.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        text.contains("downloading files: ") && text.contains(" done"),
        "the files phase has its spinner on a terminal:\n{text:?}"
    );
    // Every log line starts on a fresh line: after a newline, or after the erase-line escape
    // indicatif writes when it clears the bars to print above them. A line written over a bar
    // would follow the bar's own text.
    let mut checked = 0;
    for needle in [
        "taking the manifests",
        "manifest.yaml: split",
        "linux/amd64: pulling",
    ] {
        for (at, _) in text.match_indices(needle) {
            let before = &text[..at];
            let fresh = before.is_empty()
                || before.ends_with('\n')
                || before.ends_with("\x1b[2K")
                || before.ends_with("\x1b[K")
                || before.ends_with("\x1b[2K\r")
                || before.ends_with("\r\x1b[2K")
                || before.ends_with("\x1b[0K");
            let tail: String = before
                .chars()
                .rev()
                .take(80)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            assert!(fresh, "{needle:?} is written over something: …{tail:?}");
            checked += 1;
        }
    }
    assert!(checked >= 3, "the log lines were found:\n{text:?}");
}
