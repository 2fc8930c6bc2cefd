//! Where the CloudStack endpoint and API key pair come from, in one documented order, so an
//! operator's existing CloudMonkey or `cs` setup works unchanged:
//!
//! 1. flags: `--api-url`, `--api-key` and `--secret-key-file` (a secret is never a flag's value:
//!    it would show in `ps` and shell history), or `--profile NAME` for a CloudMonkey profile;
//! 2. `CKS_ISO_CLOUDSTACK_URL`, `CKS_ISO_CLOUDSTACK_API_KEY`, `CKS_ISO_CLOUDSTACK_SECRET_KEY`;
//! 3. the configuration file's `cloudstack-api:` (`url`, `api-key`, `secret-key-file`);
//! 4. CloudMonkey's `~/.cmk/config`: the profile its top-level `profile` key names (CloudMonkey's
//!    own default `localcloud` when it names none), its `url`, `apikey` and `secretkey`;
//! 5. the `cs` client's `CLOUDSTACK_ENDPOINT`, `CLOUDSTACK_KEY`, `CLOUDSTACK_SECRET`;
//! 6. ONE of the `cs` client's INI files: `$CLOUDSTACK_CONFIG` when set, else
//!    `~/.cloudstack.ini`; section `$CLOUDSTACK_REGION` or `cloudstack`: `endpoint`, `key`,
//!    `secret`.
//!
//! The first source that gives all three wins; one that gives only some is an error naming what is
//! missing, so a half-set variable never silently falls through to another cloud. What was used
//! is named (by `-v` and `doctor`) as a [`Credentials::source`]; the secret never is: its `Debug`
//! prints a placeholder.
//!
//! The endpoint and the keys always come from the same source (issue 44, M3). The `cs` client
//! itself merges `~/.cloudstack.ini`, `./cloudstack.ini` and `$CLOUDSTACK_CONFIG` key by key, so a
//! `cloudstack.ini` holding only `endpoint=` in a cloned repository would receive requests
//! signed with the home file's keys: cks-iso never reads `./cloudstack.ini` unless
//! `$CLOUDSTACK_CONFIG` names it, and says so when one is there ([`Credentials::warnings`]), as
//! it does when a source it did not use names another endpoint. Every file holding keys (the
//! secret key file, `~/.cmk/config`, the INI files) is held to the rules of the configuration and
//! trust files (`crate::input::read_private_text`): a regular file, at most [`MAX_FILE`] bytes,
//! owned by the user (or root) and writable by no one else.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::env;

/// The most a credentials file (a secret key file, `~/.cmk/config`, a `cloudstack.ini`) may hold:
/// far more than any holds, and a bound on what a FIFO or `/dev/zero` could cost.
pub const MAX_FILE: u64 = 256 << 10;

/// A secret key: shown nowhere (its `Debug` is a placeholder).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The secret, for signing only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// An endpoint and API key pair, with where they came from.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The API endpoint, e.g. `https://cloud.example.org/client/api`.
    pub endpoint: String,
    /// The API key (an identifier, but kept out of output all the same).
    pub api_key: Secret,
    /// The secret key.
    pub secret_key: Secret,
    /// Where they came from, e.g. `~/.cmk/config profile "prod"`: printed by `-v` and `doctor`.
    pub source: String,
    /// What the caller should warn about: another endpoint named where the keys are not, a
    /// `./cloudstack.ini` left unread.
    pub warnings: Vec<String>,
}

/// What the command line gave.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    /// `--api-url`.
    pub url: Option<String>,
    /// `--api-key`.
    pub api_key: Option<String>,
    /// `--secret-key-file`.
    pub secret_key_file: Option<PathBuf>,
    /// `--profile`: a CloudMonkey profile.
    pub profile: Option<String>,
    /// The configuration file's `cloudstack-api:` and the file's name.
    pub config: Option<(String, ApiConfig)>,
}

/// The configuration file's `cloudstack-api:`: the secret only as a file, so the (often shared)
/// configuration never holds it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ApiConfig {
    /// `url:`, the API endpoint.
    pub url: Option<String>,
    /// `api-key:`.
    pub api_key: Option<String>,
    /// `secret-key-file:`, relative to the configuration file.
    pub secret_key_file: Option<PathBuf>,
}

/// No source gave a complete set, or one gave only part of it.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// Nothing anywhere.
    #[error("no CloudStack endpoint and API keys found (looked at: {tried})")]
    Missing {
        /// The sources looked at.
        tried: String,
    },
    /// A source gave some values but not all.
    #[error("{source_name} gives {given} but not {missing}")]
    Incomplete {
        /// The source.
        source_name: String,
        /// What it gave.
        given: String,
        /// What it lacks.
        missing: String,
    },
    /// A file could not be read, or is not read (see [`MAX_FILE`] and the owner rules).
    #[error("cannot read {}: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
        /// What to do, from `crate::input::hint`.
        hint: Option<String>,
    },
    /// `--profile` names a profile `~/.cmk/config` does not have.
    #[error("{} has no profile {profile:?} (it has: {have})", path.display())]
    NoProfile {
        /// The file.
        path: PathBuf,
        /// The profile asked for.
        profile: String,
        /// The profiles it has.
        have: String,
    },
}

impl CredentialsError {
    /// What the user can do.
    pub fn hint(&self) -> String {
        match self {
            Self::Missing { .. } | Self::Incomplete { .. } => "give --api-url, --api-key and \
                --secret-key-file, set CKS_ISO_CLOUDSTACK_URL, CKS_ISO_CLOUDSTACK_API_KEY and \
                CKS_ISO_CLOUDSTACK_SECRET_KEY, or configure CloudMonkey (cmk set url/apikey/\
                secretkey); see docs/guide/registration.md"
                .into(),
            Self::Unreadable { hint, .. } => hint
                .clone()
                .unwrap_or_else(|| "check the path and that you may read the file".into()),
            Self::NoProfile { .. } => "name one of its profiles with --profile".into(),
        }
    }
}

/// Finds the credentials in the documented order; `home` is `$HOME`, `cwd` the working
/// directory (where a `cloudstack.ini` is warned about, not read).
pub fn find(
    flags: &Flags,
    home: Option<&Path>,
    cwd: &Path,
) -> Result<Credentials, CredentialsError> {
    let mut found = find_one(flags, home)?;
    found.warnings = warnings(&found, home, cwd);
    Ok(found)
}

fn find_one(flags: &Flags, home: Option<&Path>) -> Result<Credentials, CredentialsError> {
    let mut tried = Vec::new();
    // 1. Flags.
    let secret = match &flags.secret_key_file {
        Some(path) => Some(read_secret(path)?),
        None => None,
    };
    if let Some(found) = complete(
        "the flags --api-url, --api-key, --secret-key-file",
        [
            ("--api-url", flags.url.clone()),
            ("--api-key", flags.api_key.clone()),
            ("--secret-key-file", secret),
        ],
    )? {
        return Ok(found);
    }
    tried.push("--api-url/--api-key/--secret-key-file".to_owned());
    let cmk_path = home.map(|h| h.join(".cmk").join("config"));
    if let Some(profile) = &flags.profile {
        let path = cmk_path.ok_or_else(|| CredentialsError::Missing {
            tried: "--profile needs $HOME to find ~/.cmk/config".into(),
        })?;
        return cmk(&path, Some(profile))?.ok_or_else(|| CredentialsError::Missing {
            tried: path.display().to_string(),
        });
    }
    // 2. Our variables.
    if let Some(found) = from_own_variables()? {
        return Ok(found);
    }
    tried.push("CKS_ISO_CLOUDSTACK_*".to_owned());
    // 3. The configuration file.
    if let Some((file, api)) = &flags.config {
        let secret = match &api.secret_key_file {
            Some(path) => Some(read_secret(path)?),
            None => None,
        };
        if let Some(found) = complete(
            &format!("cloudstack-api: of {file}"),
            [
                ("url", api.url.clone()),
                ("api-key", api.api_key.clone()),
                ("secret-key-file", secret),
            ],
        )? {
            return Ok(found);
        }
        tried.push(format!("cloudstack-api: of {file}"));
    }
    // 4. CloudMonkey.
    if let Some(path) = &cmk_path {
        if let Some(found) = cmk(path, None)? {
            return Ok(found);
        }
        tried.push(path.display().to_string());
    }
    // 5. The cs client's variables.
    if let Some(found) = from_cs_variables()? {
        return Ok(found);
    }
    tried.push("CLOUDSTACK_ENDPOINT/KEY/SECRET".to_owned());
    // 6. One of the cs client's INI files.
    if let Some(found) = from_cs_ini(home, &mut tried)? {
        return Ok(found);
    }
    Err(CredentialsError::Missing {
        tried: tried.join("; "),
    })
}

/// Credentials from cks-iso's own variables, `CKS_ISO_CLOUDSTACK_*`, when all three are set.
fn from_own_variables() -> Result<Option<Credentials>, CredentialsError> {
    complete(
        "CKS_ISO_CLOUDSTACK_URL, _API_KEY, _SECRET_KEY",
        [
            (
                env::CKS_ISO_CLOUDSTACK_URL.name,
                env::CKS_ISO_CLOUDSTACK_URL.get(),
            ),
            (
                env::CKS_ISO_CLOUDSTACK_API_KEY.name,
                env::CKS_ISO_CLOUDSTACK_API_KEY.get(),
            ),
            (
                env::CKS_ISO_CLOUDSTACK_SECRET_KEY.name,
                env::CKS_ISO_CLOUDSTACK_SECRET_KEY.get(),
            ),
        ],
    )
}

/// Credentials from the cs client's variables, `CLOUDSTACK_ENDPOINT`, `_KEY`, `_SECRET`, when all
/// three are set.
fn from_cs_variables() -> Result<Option<Credentials>, CredentialsError> {
    complete(
        "CLOUDSTACK_ENDPOINT, CLOUDSTACK_KEY, CLOUDSTACK_SECRET",
        [
            (
                env::CLOUDSTACK_ENDPOINT.name,
                env::CLOUDSTACK_ENDPOINT.get(),
            ),
            (env::CLOUDSTACK_KEY.name, env::CLOUDSTACK_KEY.get()),
            (env::CLOUDSTACK_SECRET.name, env::CLOUDSTACK_SECRET.get()),
        ],
    )
}

/// Credentials from the cs client's INI file (`CLOUDSTACK_CONFIG`, else `~/.cloudstack.ini`),
/// its `CLOUDSTACK_REGION` section (else `[cloudstack]`); the file is added to `tried` when it
/// gives none.
fn from_cs_ini(
    home: Option<&Path>,
    tried: &mut Vec<String>,
) -> Result<Option<Credentials>, CredentialsError> {
    let asked = env::CLOUDSTACK_CONFIG.get().map(|p| expand_home(&p, home));
    let path = asked
        .clone()
        .or_else(|| home.map(|h| h.join(".cloudstack.ini")));
    if let Some(path) = &path {
        let section = env::CLOUDSTACK_REGION
            .get()
            .unwrap_or_else(|| "cloudstack".into());
        if let Some(ini) = read_ini(path)? {
            let keys = ini.get(&section).cloned().unwrap_or_default();
            let name = format!("[{section}] of {}", path.display());
            if let Some(found) = complete(
                &name,
                [
                    ("endpoint", keys.get("endpoint").cloned()),
                    ("key", keys.get("key").cloned()),
                    ("secret", keys.get("secret").cloned()),
                ],
            )? {
                return Ok(Some(found));
            }
        }
        tried.push(path.display().to_string());
    }
    Ok(None)
}

/// The warnings for `found` (see [`Credentials::warnings`]): endpoints named by the sources not
/// used, and a `./cloudstack.ini` that is not read.
fn warnings(found: &Credentials, home: Option<&Path>, cwd: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if found
        .endpoint
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    {
        out.push(format!(
            "the CloudStack endpoint {} is plain http: the requests are signed, but anyone on the \
             path reads them and can answer in CloudStack's place (which versions exist, what to \
             retire); use its https:// address",
            crate::fetch::redact(&found.endpoint)
        ));
    }
    let mut elsewhere: Vec<(String, String)> =
        [&env::CKS_ISO_CLOUDSTACK_URL, &env::CLOUDSTACK_ENDPOINT]
            .iter()
            .filter_map(|v| Some((v.name.to_owned(), v.get()?)))
            .collect();
    let local = cwd.join("cloudstack.ini");
    let asked = env::CLOUDSTACK_CONFIG.get().map(|p| expand_home(&p, home));
    let local_asked = asked.as_deref().is_some_and(|a| same_file(a, &local));
    if !local_asked && local.is_file() {
        out.push(format!(
            "{} is not read: cks-iso takes the endpoint and keys from one file, and reads a \
             cloudstack.ini in the working directory only when CLOUDSTACK_CONFIG names it",
            local.display()
        ));
        if let Ok(Some(ini)) = read_ini(&local) {
            for keys in ini.values() {
                if let Some(e) = keys.get("endpoint") {
                    elsewhere.push((local.display().to_string(), e.clone()));
                }
            }
        }
    }
    for (source, endpoint) in elsewhere {
        if endpoint.trim_end_matches('/') != found.endpoint.trim_end_matches('/') {
            out.push(format!(
                "{source} names the endpoint {}, but the endpoint and keys used come from {} \
                 ({}): the endpoint and the keys are only ever taken from one place",
                crate::fetch::redact(&endpoint),
                found.source,
                crate::fetch::redact(&found.endpoint)
            ));
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A source's three values: all → credentials, none → `None`, some → an error naming the rest.
fn complete(
    source: &str,
    values: [(&str, Option<String>); 3],
) -> Result<Option<Credentials>, CredentialsError> {
    let given: Vec<&str> = values
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(n, _)| *n)
        .collect();
    let missing: Vec<&str> = values
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| *n)
        .collect();
    if given.is_empty() {
        return Ok(None);
    }
    if !missing.is_empty() {
        return Err(CredentialsError::Incomplete {
            source_name: source.to_owned(),
            given: given.join(", "),
            missing: missing.join(", "),
        });
    }
    let [(_, Some(url)), (_, Some(key)), (_, Some(secret))] = values else {
        unreachable!("all three are set")
    };
    Ok(Some(Credentials {
        endpoint: url,
        api_key: Secret::new(key),
        secret_key: Secret::new(secret),
        source: source.to_owned(),
        warnings: Vec::new(),
    }))
}

/// CloudMonkey's file: the profile asked for, else the one its `profile` key names. `None` when
/// the file is missing or the profile holds no key pair (a user name and password profile).
fn cmk(path: &Path, asked: Option<&str>) -> Result<Option<Credentials>, CredentialsError> {
    let Some(ini) = read_ini(path)? else {
        return Ok(None);
    };
    let current = ini
        .get("")
        .and_then(|top| top.get("profile").cloned())
        .unwrap_or_else(|| "localcloud".into());
    let profile = asked.map_or(current, str::to_owned);
    let Some(keys) = ini.get(&profile) else {
        if asked.is_some() {
            return Err(CredentialsError::NoProfile {
                path: path.to_owned(),
                profile,
                have: ini
                    .keys()
                    .filter(|k| !k.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        return Ok(None);
    };
    let get = |k: &str| keys.get(k).cloned().filter(|v| !v.is_empty());
    let source = format!("{} profile {profile:?}", path.display());
    match (get("apikey"), get("secretkey")) {
        (None, None) if asked.is_none() => Ok(None),
        (key, secret) => complete(
            &source,
            [("url", get("url")), ("apikey", key), ("secretkey", secret)],
        ),
    }
}

/// The first line of a secret key file, trimmed; the file held to the rules of [`MAX_FILE`].
fn read_secret(path: &Path) -> Result<String, CredentialsError> {
    let text = crate::input::read_private_text(path, MAX_FILE)
        .map_err(|e| unreadable(path, &e, "a CloudStack secret key"))?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

fn unreadable(path: &Path, e: &std::io::Error, what: &str) -> CredentialsError {
    CredentialsError::Unreadable {
        path: path.to_owned(),
        reason: e.to_string(),
        hint: crate::input::hint(e, path, what),
    }
}

fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// Sections (the part before any `[section]` is `""`) → keys (lower case) → values.
pub type Ini = BTreeMap<String, BTreeMap<String, String>>;

/// Reads an INI file as both go-ini (CloudMonkey) and Python's configparser (`cs`) read the files
/// they write: `[section]` lines, `key = value` or `key: value`, whole-line `#` and `;` comments,
/// values trimmed, no inline comments (CloudMonkey loads with `IgnoreInlineComment`). `None` when
/// the file does not exist. Hand-written: a few lines for the subset both write, where an INI
/// crate would add its own dialect's rules (inline comments, escapes) that neither client has.
pub fn read_ini(path: &Path) -> Result<Option<Ini>, CredentialsError> {
    let text = match crate::input::read_private_text(path, MAX_FILE) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(path, &e, "CloudStack API settings")),
    };
    Ok(Some(parse_ini(&text)))
}

/// The parser of [`read_ini`].
pub fn parse_ini(text: &str) -> Ini {
    let mut ini = Ini::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_owned();
            ini.entry(section.clone()).or_default();
            continue;
        }
        let split = line.find(['=', ':']);
        if let Some(at) = split {
            let key = line[..at].trim().to_ascii_lowercase();
            let value = line[at + 1..].trim().to_owned();
            ini.entry(section.clone()).or_default().insert(key, value);
        }
    }
    ini
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloudmonkey_and_cs_files_parse_alike() {
        let ini = parse_ini(
            "prompt = 🐱\nprofile = prod\n\n[localcloud]\nurl = http://a/client/api\n\
             ; comment\n[prod]\nurl = https://b/client/api\napikey = K\nsecretkey = S=x\n",
        );
        assert_eq!(ini[""]["profile"], "prod");
        assert_eq!(ini["prod"]["secretkey"], "S=x");
        let cs = parse_ini("[cloudstack]\nendpoint: https://c/client/api\nKey = k\n");
        assert_eq!(cs["cloudstack"]["key"], "k");
        assert_eq!(cs["cloudstack"]["endpoint"], "https://c/client/api");
    }

    #[test]
    fn a_partial_source_is_an_error_naming_what_is_missing() {
        let err = complete(
            "X",
            [
                ("u", Some("http://x".into())),
                ("k", None),
                ("s", Some("s".into())),
            ],
        )
        .unwrap_err()
        .to_string();
        assert_eq!(err, "X gives u, s but not k");
        assert!(
            complete("X", [("u", None), ("k", None), ("s", None)])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_secret_never_shows_in_debug_output() {
        let c = Credentials {
            endpoint: "http://x".into(),
            api_key: Secret::new("THE-KEY"),
            secret_key: Secret::new("THE-SECRET"),
            source: "s".into(),
            warnings: Vec::new(),
        };
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("THE-SECRET") && !shown.contains("THE-KEY"),
            "{shown}"
        );
    }
}
