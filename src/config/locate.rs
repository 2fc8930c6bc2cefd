//! Where the configuration file is looked for when none is named, and loading it.

use std::path::PathBuf;

use super::{ConfigError, Network, Settings, merge};
use crate::env;

/// The system-wide configuration file, read when the user has none.
pub const SYSTEM_CONFIG: &str = "/etc/cks-iso/config.yaml";

/// Where a configuration file is looked for when neither `--config` nor `CKS_ISO_CONFIG` names
/// one, first found wins: `$XDG_CONFIG_HOME/cks-iso/config.yaml` (an absolute path, per the XDG
/// base directory spec; else `~/.config/cks-iso/config.yaml`), then [`SYSTEM_CONFIG`].
pub fn default_locations() -> Vec<PathBuf> {
    let user = env::XDG_CONFIG_HOME
        .get_os()
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            env::HOME
                .get_os()
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        });
    user.map(|dir| dir.join("cks-iso/config.yaml"))
        .into_iter()
        .chain([PathBuf::from(SYSTEM_CONFIG)])
        .collect()
}

/// The first of `candidates` that is there. One that cannot even be looked at (a directory
/// without permission) counts as there, so that reading it says why instead of it being skipped.
pub(super) fn first_present(candidates: &[PathBuf]) -> Option<&PathBuf> {
    candidates
        .iter()
        .find(|path| match path.symlink_metadata() {
            Ok(_) => true,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ),
        })
}

/// Loads the file the flags name (`--config` or `CKS_ISO_CONFIG`), else the first default one
/// present ([`default_locations`]), if any, and merges the flags into it.
pub fn load(flags: Network) -> Result<Settings, ConfigError> {
    let file = match &flags.config {
        Some(path) => Some((path.clone(), Network::load(path)?)),
        None => match first_present(&default_locations()) {
            Some(path) => Some((path.clone(), Network::load(path).map_err(|e| e.implicit())?)),
            None => None,
        },
    };
    merge(file, flags)
}
