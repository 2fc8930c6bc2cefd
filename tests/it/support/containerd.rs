//! A private containerd (Debian's 1.6 binary) with its own root, state, socket and config under
//! a temporary directory, so tests never touch a system containerd. It needs root: a test that
//! uses it fails when not run as root, saying how to run it, unless `CKS_ISO_TESTS_WITHOUT_ROOT`
//! is set ([`super::root_or_skip`]).

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{require, run_tool};

/// A running containerd, stopped (by its pid) when dropped.
pub struct Containerd {
    child: Child,
    socket: PathBuf,
    dir: TempDir,
}

impl Containerd {
    /// Starts one. When not root the test fails, or, with `CKS_ISO_TESTS_WITHOUT_ROOT` set, this
    /// returns `None` after saying that the containerd check is skipped.
    pub fn start() -> Option<Self> {
        if !super::root_or_skip("the containerd import check") {
            return None;
        }
        require("containerd");
        require("ctr");
        // Under /tmp: a unix socket path must stay under 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("cks-ctrd")
            .tempdir_in("/tmp")
            .unwrap();
        let socket = dir.path().join("c.sock");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, config_toml(&dir, &socket)).unwrap();
        let log = std::fs::File::create(dir.path().join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("cannot start containerd");
        let containerd = Self { child, socket, dir };
        containerd.wait_ready();
        Some(containerd)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let up = Command::new("ctr")
                .args(["--address", self.socket.to_str().unwrap(), "version"])
                .output()
                .is_ok_and(|o| o.status.success());
            if up {
                return;
            }
            let log = std::fs::read_to_string(self.dir.path().join("containerd.log"));
            assert!(
                Instant::now() < deadline,
                "containerd did not come up in 30 s; its log:\n{}",
                log.unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Runs `ctr --address <socket> -n k8s.io <args>`, failing the test if it fails.
    pub fn ctr(&self, args: &[&str]) -> Output {
        let mut all = vec!["--address", self.socket.to_str().unwrap(), "-n", "k8s.io"];
        all.extend_from_slice(args);
        run_tool("ctr", &all)
    }

    /// Runs `ctr --address <socket> -n k8s.io <args>` and returns what it did, failed or not
    /// (for a test that expects containerd to refuse something).
    pub fn try_ctr(&self, args: &[&str]) -> Output {
        Command::new("ctr")
            .args(["--address", self.socket.to_str().unwrap(), "-n", "k8s.io"])
            .args(args)
            .output()
            .expect("cannot run ctr")
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config_toml(dir: &TempDir, socket: &std::path::Path) -> String {
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""
"#,
        root = root.display(),
        state = state.display(),
        socket = socket.display(),
    )
}
