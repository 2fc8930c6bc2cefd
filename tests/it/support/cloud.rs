//! A CloudStack stand-in (testworld's), a web server the ISOs are published on, and a HOME whose
//! `~/.cmk/config` holds the stand-in's key pair, for the registration tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cks_iso_testworld::cloudstack::{CloudStackServer, IsoHost, Options};

use super::{cks_iso, p};

/// The stand-in, where ISOs are published, and a home for cks-iso's credentials.
pub struct Cloud {
    /// The CloudStack API.
    pub api: CloudStackServer,
    /// Serves `published`.
    pub host: IsoHost,
    /// The directory `host` serves.
    pub published: PathBuf,
    /// `$HOME` of the commands (`.cmk/config` inside).
    pub home: PathBuf,
    /// Scratch space.
    pub dir: tempfile::TempDir,
}

impl Cloud {
    /// Everything started; `~/.cmk/config` names profile `world` with the stand-in's keys.
    pub fn start(options: Options) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let published = dir.path().join("published");
        let home = dir.path().join("home");
        fs::create_dir_all(&published).unwrap();
        fs::create_dir_all(home.join(".cmk")).unwrap();
        let api = CloudStackServer::start(options);
        let o = api.options();
        fs::write(
            home.join(".cmk/config"),
            format!(
                "prompt = 🐱\nasyncblock = true\ntimeout = 1800\noutput = json\nprofile = world\n\n\
                 [localcloud]\nurl = http://localhost:8080/client/api\nusername = admin\n\
                 password = password\ndomain = /\napikey = \nsecretkey = \n\n\
                 [world]\nurl = {}\nusername = \npassword = \ndomain = /\napikey = {}\nsecretkey = {}\n",
                api.endpoint(),
                o.api_key,
                o.secret_key
            ),
        )
        .unwrap();
        let host = IsoHost::start(published.clone());
        Self {
            api,
            host,
            published,
            home,
            dir,
        }
    }

    /// `cks-iso ARGS` with this HOME, no credential variables of the caller, fast polling.
    pub fn cks(&self, args: &[&str]) -> Command {
        let mut cmd = cks_iso();
        for var in [
            "CKS_ISO_CLOUDSTACK_URL",
            "CKS_ISO_CLOUDSTACK_API_KEY",
            "CKS_ISO_CLOUDSTACK_SECRET_KEY",
            "CLOUDSTACK_ENDPOINT",
            "CLOUDSTACK_KEY",
            "CLOUDSTACK_SECRET",
            "CLOUDSTACK_CONFIG",
            "CLOUDSTACK_REGION",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .current_dir(self.dir.path())
            .args(args);
        cmd
    }

    /// `register ISOs --publish-url <host> --poll-interval 0.1`, plus `extra`.
    pub fn register(&self, isos: &[&Path], extra: &[&str]) -> Command {
        let mut cmd = self.cks(&["register"]);
        cmd.args(isos.iter().map(|i| p(i)))
            .args(["--publish-url", &self.host.url(), "--poll-interval", "0.1"])
            .args(extra);
        cmd
    }

    /// The secrets that must never be shown: the API key and the secret key.
    pub fn secrets(&self) -> [String; 2] {
        let o = self.api.options();
        [o.api_key.clone(), o.secret_key.clone()]
    }

    /// Copies `iso` into the published directory (under its own name).
    pub fn publish(&self, iso: &Path) -> PathBuf {
        let to = self.published.join(iso.file_name().unwrap());
        fs::copy(iso, &to).unwrap();
        to
    }
}

/// A small ISO built by cks-iso whose versions.txt says Kubernetes `version` for `arch`, with a
/// file of `filler` bytes (so two ISOs of the same size can differ), at `dir/name`.
pub fn small_iso(dir: &Path, name: &str, version: &str, arch: &str, filler: u8) -> PathBuf {
    let tree = dir.join(format!("tree-{name}-{filler}"));
    fs::create_dir_all(&tree).unwrap();
    fs::write(
        tree.join("versions.txt"),
        format!("kubernetes v{version}\narch {arch}\n"),
    )
    .unwrap();
    fs::write(tree.join("filler.bin"), vec![filler; 10_000]).unwrap();
    let iso = dir.join(name);
    super::build_iso(&tree, &iso);
    iso
}

/// Lowercase hex SHA-256 of a file.
pub fn sha256_of(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(fs::read(path).unwrap()))
}
