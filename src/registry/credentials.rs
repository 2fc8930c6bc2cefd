//! Who we are to a registry: the user's credentials, found where Docker and Podman keep them so
//! that an operator's `docker login` or `podman login` is enough.
//!
//! The files are read in containers-auth.json(5) order, first match wins: `--authfile`,
//! `REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json` (where `podman login` writes),
//! `$XDG_CONFIG_HOME/containers/auth.json` (else `~/.config/…`), then Docker's
//! `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`). In each file, a `credHelpers`
//! entry for the registry, then the longest `auths` key that covers the repository
//! (`quay.io/org/app`, `quay.io/org`, `quay.io`), then `credsStore`. Helpers are asked under the
//! name Docker files logins under (`https://index.docker.io/v1/` for Docker Hub). A helper that is
//! missing or fails is a warning naming it, and the search goes on (in the end, anonymously).
//! Credentials are kept out of `Debug`, logs and errors. A file is read only when it is a regular
//! file that no one but its owner (the user running this, or root) could have written
//! (`crate::input::read_private_text`).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::RegistryError;
use super::endpoint::DOCKER_HUB_API;
use crate::env;

/// The name Docker files Docker Hub logins under, in `auths` and with credential helpers.
pub const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

/// A user name and password (or token). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
    /// Whether `password` is an identity token (`identitytoken`, or a helper's `<token>`
    /// answer): an OAuth2 refresh token exchanged at the token service, never sent as Basic.
    pub identity: bool,
    /// Where they came from: the file and entry (`auths "quay.io/org" in /run/…/auth.json`).
    pub source: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

impl Credentials {
    /// The `Authorization: Basic …` value.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.username, self.password))
        )
    }
}

/// The largest auth file read: a Docker `config.json` with a few hundred logins is well under
/// 1 MiB; a FIFO or `/dev/zero` in its place cannot fill memory.
const MAX_AUTH_FILE_SIZE: u64 = 4 << 20;

/// Whether a default auth file that cannot be read is passed over: missing, a directory, or
/// unreadable for the system's reasons. What the input rules refuse (someone else could have
/// written it, a FIFO or device, too large) is not.
fn skipped(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    !crate::input::is_unsafe(err)
        && !matches!(err.kind(), InvalidInput | FileTooLarge)
        && (err.raw_os_error().is_some() || err.kind() == IsADirectory)
}

/// What credential helpers answered, per helper and server name: each is asked (and warned
/// about) once per run.
type HelperAnswers = Arc<Mutex<HashMap<(String, String), Option<Credentials>>>>;

/// The Docker/Podman configuration files to read credentials from, most specific first.
#[derive(Debug, Clone, Default)]
pub struct AuthFiles {
    /// The files; a missing one is skipped unless it was given with `--authfile`.
    pub files: Vec<PathBuf>,
    /// The `--authfile`, which must exist.
    pub explicit: Option<PathBuf>,
    /// Where `docker-credential-<helper>` programs are looked for; the process's `PATH` when
    /// `None`.
    pub helper_path: Option<OsString>,
    helpers: HelperAnswers,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// An absolute directory from `var`, as the XDG base directory spec asks (a relative one is
/// ignored).
fn xdg_dir(var: &env::Var) -> Option<PathBuf> {
    var.get_os()
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
}

impl AuthFiles {
    /// These `files`, the `explicit` one (`--authfile`) required to exist.
    pub fn new(files: Vec<PathBuf>, explicit: Option<PathBuf>) -> Self {
        Self {
            files,
            explicit,
            ..Self::default()
        }
    }

    /// The files `--authfile` and the environment name, in containers-auth.json(5) order.
    pub fn from_env(authfile: Option<PathBuf>) -> Self {
        let mut files: Vec<PathBuf> = authfile.iter().cloned().collect();
        if let Some(file) = env::REGISTRY_AUTH_FILE.get_os().filter(|f| !f.is_empty()) {
            files.push(file.into());
        }
        let home = env::HOME
            .get_os()
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        if let Some(dir) = xdg_dir(&env::XDG_RUNTIME_DIR) {
            files.push(dir.join("containers/auth.json"));
        }
        if let Some(dir) =
            xdg_dir(&env::XDG_CONFIG_HOME).or_else(|| home.as_ref().map(|h| h.join(".config")))
        {
            files.push(dir.join("containers/auth.json"));
        }
        // Docker reads `$DOCKER_CONFIG/config.json` instead of `~/.docker/config.json`.
        match env::DOCKER_CONFIG.get_os().filter(|d| !d.is_empty()) {
            Some(dir) => files.push(PathBuf::from(dir).join("config.json")),
            None => files.extend(home.map(|h| h.join(".docker/config.json"))),
        }
        Self::new(files, authfile)
    }

    /// The credentials for `repository` on `host` (`host[:port]`, the endpoint asked), if any
    /// file has them; which file and entry gave them is logged at debug level.
    pub fn lookup(
        &self,
        host: &str,
        repository: &str,
    ) -> Result<Option<Credentials>, RegistryError> {
        for path in &self.files {
            let explicit = self.explicit.as_deref() == Some(path.as_path());
            let text = match crate::input::read_private_text(path, MAX_AUTH_FILE_SIZE) {
                Ok(text) => text,
                // A default location that holds nothing usable is skipped, as Docker and Podman
                // skip it; one that only others could have written, or a FIFO, device or
                // oversized file in its place, is refused wherever it is.
                Err(e) if !explicit && skipped(&e) => continue,
                Err(source) => {
                    return Err(RegistryError::AuthFile {
                        path: path.clone(),
                        explicit,
                        source,
                    });
                }
            };
            // The parser's message could quote the file, which holds secrets: say only where.
            let config: ConfigFile = serde_json::from_str(&text).map_err(|e| {
                RegistryError::Config(format!(
                    "{} is not a valid Docker config (line {}, column {})",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            })?;
            if let Some((mut found, entry)) = self.in_config(&config, host, repository, path)? {
                tracing::debug!(
                    "credentials for {host}/{repository} from {}, {entry}",
                    path.display()
                );
                found.source = format!("{entry} in {}", path.display());
                return Ok(Some(found));
            }
        }
        let read: Vec<String> = self
            .files
            .iter()
            .filter(|f| f.is_file())
            .map(|f| f.display().to_string())
            .collect();
        match read.is_empty() {
            true => tracing::debug!("no credentials for {host}/{repository}: no auth file exists"),
            false => tracing::debug!(
                "no credentials for {host}/{repository} in {}; asking anonymously",
                read.join(", ")
            ),
        }
        Ok(None)
    }

    /// The credentials `config` (read from `path`) gives, with the entry that gave them.
    fn in_config(
        &self,
        config: &ConfigFile,
        host: &str,
        repository: &str,
        path: &Path,
    ) -> Result<Option<(Credentials, String)>, RegistryError> {
        let registry = registry_name(host);
        if let Some((key, helper)) = config
            .cred_helpers
            .iter()
            .find(|(key, _)| key_of(key).0 == registry)
            && let Some(found) = self.helper_get(helper, host, path)
        {
            return Ok(Some((
                found,
                helper_entry(helper, &format!("credHelpers {key:?}")),
            )));
        }
        let best = config
            .auths
            .iter()
            .filter_map(|(key, entry)| {
                let (key_registry, namespace) = key_of(key);
                let covers = namespace.is_empty()
                    || repository == namespace
                    || repository
                        .strip_prefix(namespace)
                        .is_some_and(|rest| rest.starts_with('/'));
                (key_registry == registry && covers).then_some((namespace.len(), key, entry))
            })
            // Longest namespace first; among equals, the first key in the file's order.
            .min_by_key(|(len, _, _)| std::cmp::Reverse(*len));
        if let Some((_, key, entry)) = best {
            let what = format!("auths {key:?}");
            if let Some(token) = entry.identitytoken.as_deref().filter(|t| !t.is_empty()) {
                let found = Credentials {
                    username: entry.username.clone().unwrap_or_default(),
                    password: token.to_owned(),
                    identity: true,
                    source: String::new(),
                };
                return Ok(Some((found, format!("{what} (identitytoken)"))));
            }
            if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
                let bad = || {
                    RegistryError::Config(format!(
                        "the `auth` of {key:?} in {} is not base64 of user:password",
                        path.display()
                    ))
                };
                let decoded = STANDARD.decode(auth.trim()).map_err(|_| bad())?;
                let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
                let (username, password) = decoded.split_once(':').ok_or_else(bad)?;
                let found = Credentials {
                    username: username.to_owned(),
                    password: password.to_owned(),
                    identity: false,
                    source: String::new(),
                };
                return Ok(Some((found, what)));
            }
            if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
                let found = Credentials {
                    username: username.clone(),
                    password: password.clone(),
                    identity: false,
                    source: String::new(),
                };
                return Ok(Some((found, what)));
            }
        }
        match config.creds_store.as_deref().filter(|s| !s.is_empty()) {
            Some(store) => Ok(self
                .helper_get(store, host, path)
                .map(|found| (found, helper_entry(store, "credsStore")))),
            None => Ok(None),
        }
    }

    /// What `docker-credential-<helper> get` answers for `host`, asked once per run. A helper
    /// that cannot be run or fails is a warning, then no credentials; "not found" is no
    /// credentials without a warning.
    fn helper_get(&self, helper: &str, host: &str, path: &Path) -> Option<Credentials> {
        let server = helper_server(host);
        let key = (helper.to_owned(), server.to_owned());
        let mut answers = self.helpers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(answer) = answers.get(&key) {
            return answer.clone();
        }
        let answer = match super::helper::run(helper, server, self.helper_path.as_ref()) {
            Ok(answer) => answer,
            Err(reason) => {
                tracing::warn!(
                    "credential helper docker-credential-{helper} (named in {}) failed for \
                     {server}: {reason}; going on without its credentials (try it with `echo \
                     {server} | docker-credential-{helper} get`, or remove it from that file)",
                    path.display()
                );
                None
            }
        };
        answers.insert(key, answer.clone());
        answer
    }
}

/// How a log line names a helper's entry.
fn helper_entry(helper: &str, entry: &str) -> String {
    format!("{entry} (docker-credential-{helper})")
}

/// One name per registry: Docker Hub's aliases are `docker.io`.
fn registry_name(host: &str) -> &str {
    match host {
        "docker.io" | "index.docker.io" | DOCKER_HUB_API => "docker.io",
        other => other,
    }
}

/// The registry and namespace an `auths` or `credHelpers` key names. A key with a scheme is a
/// URL as Docker writes them (`https://index.docker.io/v1/`): only its host counts. Without one
/// it is `registry[/namespace…]` as containers-auth.json(5) writes them.
fn key_of(key: &str) -> (&str, &str) {
    if let Some((_, rest)) = key.split_once("://") {
        let host = rest.split('/').next().unwrap_or(rest);
        return (registry_name(host), "");
    }
    let (registry, namespace) = key.split_once('/').unwrap_or((key, ""));
    (registry_name(registry), namespace.trim_end_matches('/'))
}

/// The server name helpers are asked for, as Docker asks them.
fn helper_server(host: &str) -> &str {
    match registry_name(host) {
        "docker.io" => DOCKER_HUB_AUTH_KEY,
        _ => host,
    }
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
