//! What can be wrong with the configuration, with the hint each error gives.

use std::path::PathBuf;

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the configuration file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
        /// Whether it was read because it is in a default location, not because it was named.
        implicit: bool,
    },
    /// The file is not valid YAML for the model (includes unknown keys, by name).
    #[error("configuration file {}: {}", path.display(), first_line(parser))]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error, naming the key and line. Not a `source`: only its first line is
        /// shown, the rest being a snippet of the file.
        parser: Box<serde_saphyr::Error>,
    },
    /// A value is out of range or malformed.
    #[error("{origin}: {key} {reason}")]
    Value {
        /// The file path or `command line`.
        origin: String,
        /// The key or flag.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl ConfigError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        // Who could have written it, and (for a file named) what it is, come first; a default
        // location's file may also just be removed.
        if let Self::Read {
            path,
            source,
            implicit,
        } = self
            && (!implicit || crate::input::is_unsafe(source))
            && let Some(hint) = crate::input::hint(source, path, "cks-iso's YAML configuration")
        {
            return Some(hint);
        }
        Some(match self {
            Self::Read {
                implicit: true,
                path,
                ..
            } => format!(
                "make {} readable or remove it, or pass --config FILE to read another",
                path.display()
            ),
            Self::Read { .. } => {
                "check --config or CKS_ISO_CONFIG; leave both unset to use flags only".into()
            }
            Self::Parse { .. } => {
                "known keys: mirrors, registry-mirrors, insecure-registries, ca-files, authfile, \
                 jobs, retries, connect-timeout, idle-timeout, signatures, trusted-root, \
                 signature-policy, rekor-url, cloudstack (see \
                 README, Configuration file)"
                    .into()
            }
            Self::Value { .. } => return None,
        })
    }
}

impl ConfigError {
    /// The same error for a file read from a default location.
    pub(super) fn implicit(self) -> Self {
        match self {
            Self::Read { path, source, .. } => Self::Read {
                path,
                source,
                implicit: true,
            },
            other => other,
        }
    }
}

/// The first line of the parser's message, which names the key and position; the rest is a
/// snippet of the source.
fn first_line(err: &serde_saphyr::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}
