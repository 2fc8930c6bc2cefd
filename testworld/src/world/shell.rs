//! What a command run inside the world sees, and what outlives the world.
//!
//! `cks-iso-world` and the tests that run the documentation's commands give a command the same
//! variables, from here: the configuration, the manifest URLs, the trusted root, and a cache of
//! the world's own. The cache matters: the world serves stand-ins under the real upstream URLs
//! and tags, so a build inside it that used the user's `~/.cache/cks-iso` would leave fakes
//! there that a later real `--offline` build takes. The far side of an air gap has no world, so
//! what it needs to verify what the world signed (its trusted root) can be written to a
//! directory that outlives it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::World;

/// The file [`World::export_far_side`] writes the trusted root to.
pub const FAR_SIDE_TRUSTED_ROOT: &str = "trusted_root.json";

/// The identity `CKS_WORLD_ID_TOKEN` names: who signs keyless in `cks-iso-world`.
pub const SHELL_SIGNER: &str = "builder@cks-world.example";

impl World {
    /// The cache a command inside the world uses (`XDG_CACHE_HOME`): in the world's own
    /// directory, so it goes when the world stops and never mixes with the user's.
    pub fn cache_home(&self) -> PathBuf {
        self._dir.path().join("cache")
    }

    /// Every variable `cks-iso-world` sets for its command: `CKS_ISO_CONFIG`, the manifest URLs
    /// (`CKS_WORLD_NETWORK`, `CKS_WORLD_DASHBOARD`, `CKS_WORLD_HEADLAMP`), the trusted root
    /// (`CKS_WORLD_TRUSTED_ROOT`), keyless signing's signing config, issuer and an identity
    /// token for `SHELL_SIGNER` valid an hour (`CKS_WORLD_SIGNING_CONFIG`,
    /// `CKS_WORLD_OIDC_ISSUER`, `CKS_WORLD_ID_TOKEN`) and `XDG_CACHE_HOME`
    /// ([`World::cache_home`]).
    pub fn shell_env(&self) -> Vec<(&'static str, OsString)> {
        let claims = crate::oidc::Claims {
            lifetime: 3600,
            ..crate::oidc::Claims::email(SHELL_SIGNER)
        };
        vec![
            (
                "CKS_WORLD_SIGNING_CONFIG",
                self.signing_config_path().into(),
            ),
            ("CKS_WORLD_OIDC_ISSUER", self.oidc().url().into()),
            ("CKS_WORLD_ID_TOKEN", self.oidc().mint(&claims).into()),
            ("CKS_ISO_CONFIG", self.config_path().into()),
            ("CKS_WORLD_NETWORK", self.network_url().into()),
            ("CKS_WORLD_DASHBOARD", self.dashboard_url().into()),
            ("CKS_WORLD_HEADLAMP", self.headlamp_url().into()),
            ("CKS_WORLD_TRUSTED_ROOT", self.trusted_root_path().into()),
            ("XDG_CACHE_HOME", self.cache_home().into()),
        ]
    }

    /// Writes what the far side of an air gap needs once the world is gone into `dir`
    /// (created when missing): the world's Sigstore trusted root as
    /// [`FAR_SIDE_TRUSTED_ROOT`], for `cache import` and `build --locked --offline` there with
    /// `--trusted-root`. Returns the file written.
    pub fn export_far_side(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let root = dir.join(FAR_SIDE_TRUSTED_ROOT);
        std::fs::copy(self.trusted_root_path(), &root)?;
        Ok(root)
    }
}
