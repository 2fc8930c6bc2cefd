//! The documentation's commands run: the blocks marked `world` inside a test world, the
//! `far-side` ones after it stopped, and `make demo`'s script with the next steps it prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cks_iso_testworld::world::{Options, World};

use super::{Block, Mark, all_blocks, lines, mark, misunderstood, root};
use crate::support::{self, no_internet};

/// `bash` running in `dir` with the test binaries first on PATH, no internet, `home` as HOME and
/// nothing of the caller's cks-iso settings.
fn shell(dir: &Path, home: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_cks-iso")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    no_internet(&mut cmd);
    cmd.current_dir(dir)
        .env("PATH", path)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("SHELL", "bash");
    for var in [
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_RUNTIME_DIR",
        "CKS_ISO_CONFIG",
        "CKS_ISO_LOG",
        "SOURCE_DATE_EPOCH",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// A bash script running `lines` in order, stopping at the first that does not exit as its
/// `# exit N` comment says (0 without one), and saying which.
fn script(lines: &[String]) -> String {
    let mut out = String::from("set -o pipefail\n");
    for line in lines {
        let (command, expected) = match line.rsplit_once("# exit ") {
            Some((c, n)) if n.trim().parse::<u8>().is_ok() => (c.trim(), n.trim()),
            _ => (line.as_str(), "0"),
        };
        let quoted = shlex::try_quote(command).unwrap();
        out.push_str(&format!(
            "echo \"+ \"{quoted}\nif {command}\nthen rc=0; else rc=$?; fi\n\
             [ \"$rc\" = {expected} ] || {{ echo \"docs: exit $rc, expected {expected}: \"{quoted} >&2; exit 1; }}\n"
        ));
    }
    out
}

/// Runs `lines` as [`script`] in `cmd`; panics with their output unless all exited as expected.
fn run_lines(what: &str, mut cmd: Command, lines: &[String]) -> Output {
    let out = cmd.arg("-c").arg(script(lines)).output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Everything under `dir` (nothing when it does not exist).
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            out.push(entry.path());
            if entry.path().is_dir() {
                out.extend(listing(&entry.path()));
            }
        }
    }
    out
}

/// Long (35 s alone here: the README's two builds and the upgrade walk's three, each a debug
/// build of a world ISO, in one world start): runs every
/// block marked `world` inside one test world, page by page, then stops it and runs the
/// `far-side` blocks without it. Neither touches the home it is given.
#[test]
fn the_blocks_marked_world_run_in_the_world_and_far_side_blocks_without_it() {
    let tmp = support::open_tempdir();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let blocks = all_blocks();
    let marked = |m: Mark| -> Vec<&Block> {
        (blocks.iter())
            .filter(|b| mark(&b.info).is_ok_and(|k| k == m))
            .collect()
    };
    let dir_of = |page: &str| {
        let dir = tmp.path().join(page.replace('/', "_"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    // As `CKS_WORLD_ALSO_KUBERNETES=1.33.0 CKS_WORLD_FAR_SIDE=far-side cks-iso-world` starts it
    // (docs/guide/upgrades.md walks an upgrade from 1.33.0 across an air gap).
    let world = World::start(Options {
        also_kubernetes: vec!["1.33.0".into()],
        ..Options::default()
    });
    for block in marked(Mark::World) {
        let dir = dir_of(&block.page);
        world.export_far_side(&dir.join("far-side")).unwrap();
        let mut cmd = shell(&dir, &home);
        cmd.envs(world.shell_env());
        run_lines(&block.at(), cmd, &lines(block));
    }
    drop(world);
    for block in marked(Mark::FarSide) {
        let dir = dir_of(&block.page);
        // The far side is another machine: its own home, so its own default cache.
        let far_home = dir.join("far-home");
        std::fs::create_dir_all(&far_home).unwrap();
        let out = run_lines(&block.at(), shell(&dir, &far_home), &lines(block));
        // Given the world's root, nothing it imports fails to verify (the check below says so).
        let (_, stderr) = support::text(&out);
        assert!(
            !stderr.contains("do not verify"),
            "{}: {stderr}",
            block.at()
        );
    }
    assert_eq!(listing(&home), Vec::<PathBuf>::new(), "written into HOME");

    // The walk's carry without the world's root: the import says at once what the build would
    // find one step later.
    let page = dir_of("docs/guide/upgrades.md");
    let lone = page.join("lone-home");
    std::fs::create_dir_all(&lone).unwrap();
    let mut import = shell(&page, &lone);
    import.args(["-c", "cks-iso cache import delta/ --locked new.lock"]);
    let out = support::run(&mut import);
    let (_, stderr) = support::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("signed download(s) imported from delta")
            && stderr.contains("do not verify against the trusted root this side uses")
            && stderr.contains("https://dl.k8s.io/release/v1.33.1/")
            && stderr.contains("--trusted-root"),
        "{stderr}"
    );
}

/// The lines of `text` after the line holding `marker` and the blank line after it, up to the
/// next blank line.
fn section(text: &str, marker: &str) -> Vec<String> {
    let mut rest = text.lines().skip_while(|l| !l.contains(marker)).skip(1);
    let body: Vec<&str> = rest
        .by_ref()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let block = Block {
        page: "demo".into(),
        line: 0,
        info: "sh world".into(),
        text: body.join("\n"),
    };
    lines(&block)
}

/// Long (48 s alone here: the demo's two-arch build, then its next steps' two builds and its
/// command for the real upstream, each a debug build of a world ISO): `make demo`'s script, with the binaries of this test run, a home and
/// an `XDG_CACHE_HOME` of its own, leaves both untouched and prints no registration line; the
/// next steps it prints run in a world as printed, and its command for the real upstream is
/// understood and builds in the world, whose stand-ins answer for upstream's URLs.
#[test]
fn the_demo_keeps_to_itself_and_its_next_steps_run() {
    let bin = Path::new(env!("CARGO_BIN_EXE_cks-iso"));
    let world_bin = bin.with_file_name("cks-iso-world");
    assert!(
        world_bin.exists(),
        "{} is missing: `cargo test --workspace` (make test) builds it, or \
         `cargo build -p cks-iso-testworld --bin cks-iso-world`",
        world_bin.display()
    );
    let tmp = support::open_tempdir();
    let at = |name: &str| tmp.path().join(name);
    let bins = at("bin");
    std::fs::create_dir_all(&bins).unwrap();
    std::os::unix::fs::symlink(bin, bins.join("cks-iso")).unwrap();
    std::os::unix::fs::symlink(&world_bin, bins.join("cks-iso-world")).unwrap();
    let (home, xdg) = (at("home"), at("xdg-cache"));
    std::fs::create_dir_all(&home).unwrap();

    let mut demo = shell(tmp.path(), &home);
    demo.arg(root().join("scripts/demo.sh"))
        .env("DEMO_BIN_DIR", &bins)
        .env("DEMO_OUT", at("demo-out"))
        .env("XDG_CACHE_HOME", &xdg);
    let out = support::run(&mut demo);
    let (stdout, stderr) = support::text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        !stdout.contains("cmk add") && stdout.contains("made of the world's stand-ins"),
        "{stdout}"
    );
    assert!(
        !xdg.exists(),
        "the demo wrote into XDG_CACHE_HOME: {:?}",
        listing(&xdg)
    );
    assert_eq!(
        listing(&home),
        Vec::<PathBuf>::new(),
        "the demo wrote into HOME"
    );

    let next = section(&stdout, "and in that shell:");
    let upstream = section(&stdout, "Against the real upstream");
    assert!(
        next.len() >= 5 && upstream.len() == 1,
        "{next:?} {upstream:?}\n{stdout}"
    );
    let problems = misunderstood(
        "the demo's next steps",
        &[next.clone(), upstream.clone()].concat(),
    );
    assert!(problems.is_empty(), "{problems:#?}");

    let world = World::start(Options::default());
    let mut steps = shell(tmp.path(), &home);
    steps.envs(world.shell_env());
    let done = run_lines("the demo's next steps", steps, &next);
    assert!(
        String::from_utf8_lossy(&done.stdout).contains("the locked rebuild is byte-identical"),
        "{}",
        String::from_utf8_lossy(&done.stdout)
    );
    let real = at("real");
    std::fs::create_dir_all(&real).unwrap();
    let mut again = shell(&real, &home);
    again.envs(world.shell_env());
    run_lines("the demo's command for the real upstream", again, &upstream);
    assert!(real.join("out/setup-v1.33.1-x86_64.iso").is_file());
    drop(world);
    assert_eq!(
        listing(&home),
        Vec::<PathBuf>::new(),
        "the next steps wrote into HOME"
    );
}

/// The runner judges each line: one that exits otherwise than its `# exit N` (0 without one)
/// stops the block, naming it; nothing after it runs.
#[test]
fn a_run_block_stops_at_the_first_line_that_exits_otherwise_than_it_says() {
    let tmp = support::open_tempdir();
    let run = |lines: &[&str]| {
        let lines: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        let mut cmd = shell(tmp.path(), tmp.path());
        cmd.arg("-c").arg(script(&lines)).output().unwrap()
    };
    let good = run(&[
        "true",
        "test 1 = 2   # exit 1",
        "echo reached | grep -q reached",
    ]);
    assert!(good.status.success(), "{good:?}");
    for (lines, expected) in [
        (
            &["true", "false", "echo never"][..],
            "docs: exit 1, expected 0: false",
        ),
        (
            &["true # exit 1", "echo never"][..],
            "docs: exit 0, expected 1: true\n",
        ),
        (
            &["false | true", "echo never"][..],
            "docs: exit 1, expected 0: false | true",
        ),
    ] {
        let out = run(lines);
        let (stdout, stderr) = support::text(&out);
        assert!(!out.status.success(), "{lines:?} passed");
        assert!(stderr.contains(expected), "{lines:?}: {stderr}");
        assert!(!stdout.contains("never\n"), "{lines:?} ran on: {stdout}");
    }
}
