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
    #[error("configuration file {}: {}", path.display(), parse_message(parser))]
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
            Self::Parse { parser, .. } => {
                let known = format!(
                    "known keys: {} (README, Configuration file)",
                    KEYS.join(", ")
                );
                match unknown_key(parser).and_then(|key| closest(&key)) {
                    Some(key) => format!("did you mean `{key}`? {known}"),
                    None => known,
                }
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
/// The keys a configuration file may hold (`Network`'s fields, kebab-case).
const KEYS: [&str; 14] = [
    "mirrors",
    "registry-mirrors",
    "insecure-registries",
    "ca-files",
    "authfile",
    "jobs",
    "retries",
    "connect-timeout",
    "idle-timeout",
    "signatures",
    "trusted-root",
    "signature-policy",
    "rekor-url",
    "cloudstack",
];

/// The key serde refused as unknown, from its ``unknown field `x`, expected one of …``.
fn unknown_key(err: &serde_saphyr::Error) -> Option<String> {
    let text = first_line(err);
    let rest = text.split("unknown field `").nth(1)?;
    Some(rest.split('`').next()?.to_owned())
}

/// The known key nearest to `key`, when it is near enough to be a typo.
fn closest(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .map(|k| (strsim::jaro_winkler(key, k), *k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The parser's first line; for an unknown key just that, the known keys being in the hint.
pub(crate) fn parse_message(err: &serde_saphyr::Error) -> String {
    let first = first_line(err);
    match (unknown_key(err), first.split_once(", expected")) {
        (Some(key), Some((_, _))) => {
            let at = first.find(" at line").map_or("", |i| &first[i..]);
            format!("unknown key `{key}`{at}")
        }
        _ => first,
    }
}

fn first_line(err: &serde_saphyr::Error) -> String {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}
