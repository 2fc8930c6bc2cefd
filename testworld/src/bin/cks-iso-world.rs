//! Runs one command inside the local upstream world, for `make demo` and for trying cks-iso by
//! hand without the internet.
//!
//! `cks-iso-world CMD [ARGS…]` starts real `git http-backend` with autoscaler-shaped tags and the
//! upstream stand-in with the typical snapshot, writes a cks-iso configuration file whose mirrors
//! send github.com, dl.k8s.io and raw.githubusercontent.com there, runs `CMD` with
//! `CKS_ISO_CONFIG` pointing at it, stops everything, and exits with `CMD`'s status. With no
//! command it prints the configuration and serves until stdin closes.

use std::io::Read;
use std::process::{Command, ExitCode};

use cks_iso_testworld::git::{GitServer, Mode, Repo, Tag};
use cks_iso_testworld::upstream::{Snapshot, UpstreamServer};

fn main() -> ExitCode {
    use Tag::{Annotated, Light};
    let repo = Repo::with_tags(
        "kubernetes/autoscaler.git",
        &[
            Annotated("cluster-autoscaler-1.32.2"),
            Annotated("cluster-autoscaler-1.33.0"),
            Annotated("cluster-autoscaler-1.33.1"),
            Light("cluster-autoscaler-1.33.2-rc.1"),
            Light("cluster-autoscaler-chart-9.50.0"),
            Light("vertical-pod-autoscaler-1.4.1"),
        ],
    );
    let git = GitServer::start(repo.project_root(), Mode::Backend);
    let upstream = UpstreamServer::start(&Snapshot::typical());
    let mut yaml = String::from("# written by cks-iso-world: the local upstream world\nmirrors:\n");
    for rule in upstream.mirror_rules() {
        let (from, to) = rule.split_once('=').expect("FROM=TO");
        yaml.push_str(&format!("  {from}: {to}\n"));
    }
    yaml.push_str(&format!(
        "  https://github.com/kubernetes/autoscaler: {}\n",
        git.url(&repo)
    ));
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("cks-iso.yaml");
    std::fs::write(&config, &yaml).expect("write the configuration");

    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        print!("{yaml}");
        eprintln!(
            "cks-iso-world: serving; CKS_ISO_CONFIG={} ; close stdin (Ctrl-D) to stop",
            config.display()
        );
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        return ExitCode::SUCCESS;
    };
    let status = Command::new(program)
        .args(rest)
        .env("CKS_ISO_CONFIG", &config)
        .status();
    match status {
        Ok(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Err(e) => {
            eprintln!("cks-iso-world: cannot run {program}: {e}");
            ExitCode::from(127)
        }
    }
}
