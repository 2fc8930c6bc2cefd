//! Who we are to a registry: the `WWW-Authenticate` challenge it answers `/v2/` with, and the
//! user's credentials from the Docker/Podman configuration (inline `auths` or a
//! `docker-credential-<helper>`). Credentials are kept out of `Debug`, logs and errors.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::RegistryError;
use super::endpoint::DOCKER_HUB_API;
use crate::env;

/// How a registry wants to be authenticated, from its answer to `GET /v2/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// It answered 200: no authentication.
    None,
    /// `Basic`: send the credentials with every request.
    Basic,
    /// `Bearer realm=…,service=…`: get a token per repository from `realm`.
    Bearer {
        /// The token service URL.
        realm: String,
        /// The `service` parameter, if given.
        service: Option<String>,
    },
}

impl Challenge {
    /// Parses a `WWW-Authenticate` value; `None` when it is neither Basic nor a usable Bearer.
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim();
        let (scheme, params) = header.split_once(' ').unwrap_or((header, ""));
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Some(Self::Basic),
            "bearer" => {
                let params = params_of(params);
                Some(Self::Bearer {
                    realm: params.get("realm")?.clone(),
                    service: params.get("service").cloned(),
                })
            }
            _ => None,
        }
    }
}

/// `key="value", key=value` pairs; quoted values may hold commas and `\"`.
fn params_of(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        out.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
}

/// A user name and password (or token). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
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

/// The Docker/Podman configuration files to read credentials from, most specific first:
/// `--authfile`, `REGISTRY_AUTH_FILE`, `$DOCKER_CONFIG/config.json`, `~/.docker/config.json`.
#[derive(Debug, Clone, Default)]
pub struct AuthFiles {
    /// The files; a missing one is skipped unless it was given with `--authfile`.
    pub files: Vec<PathBuf>,
    /// The `--authfile`, which must exist.
    pub explicit: Option<PathBuf>,
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
}

impl AuthFiles {
    /// The files the environment and `--authfile` name.
    pub fn from_env(authfile: Option<PathBuf>) -> Self {
        let mut files: Vec<PathBuf> = authfile.iter().cloned().collect();
        if let Some(file) = env::REGISTRY_AUTH_FILE.get_os().filter(|f| !f.is_empty()) {
            files.push(file.into());
        }
        if let Some(dir) = env::DOCKER_CONFIG.get_os().filter(|d| !d.is_empty()) {
            files.push(PathBuf::from(dir).join("config.json"));
        }
        if let Some(home) = env::HOME.get_os().filter(|h| !h.is_empty()) {
            files.push(PathBuf::from(home).join(".docker/config.json"));
        }
        Self {
            files,
            explicit: authfile,
        }
    }

    /// The credentials for `host` (`host[:port]`), if any file has them.
    pub fn lookup(&self, host: &str) -> Result<Option<Credentials>, RegistryError> {
        for path in &self.files {
            let text = match std::fs::read(path) {
                Ok(text) => text,
                Err(e) if self.explicit.as_deref() == Some(path.as_path()) => {
                    return Err(RegistryError::Config(format!(
                        "cannot read --authfile {}: {e}",
                        path.display()
                    )));
                }
                Err(_) => continue,
            };
            // The parser's message could quote the file, which holds secrets: say only where.
            let config: ConfigFile = serde_json::from_slice(&text).map_err(|e| {
                RegistryError::Config(format!(
                    "{} is not a valid Docker config (line {}, column {})",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            })?;
            if let Some(found) = from_config(&config, host, path)? {
                tracing::debug!("using credentials for {host} from {}", path.display());
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

/// The names a registry may be filed under in `auths`.
fn key_matches(key: &str, host: &str) -> bool {
    let key = key
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let key = key.split('/').next().unwrap_or(key);
    let hub = |h: &str| matches!(h, "docker.io" | "index.docker.io" | DOCKER_HUB_API);
    key == host || (hub(key) && hub(host))
}

fn from_config(
    config: &ConfigFile,
    host: &str,
    path: &Path,
) -> Result<Option<Credentials>, RegistryError> {
    if let Some((_, helper)) = config
        .cred_helpers
        .iter()
        .find(|(key, _)| key_matches(key, host))
    {
        return helper_get(helper, host);
    }
    if let Some((_, entry)) = config.auths.iter().find(|(key, _)| key_matches(key, host)) {
        if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
            let bad = || {
                RegistryError::Config(format!(
                    "the `auth` of {host} in {} is not base64 of user:password",
                    path.display()
                ))
            };
            let decoded = STANDARD.decode(auth.trim()).map_err(|_| bad())?;
            let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
            let (username, password) = decoded.split_once(':').ok_or_else(bad)?;
            return Ok(Some(Credentials {
                username: username.to_owned(),
                password: password.to_owned(),
            }));
        }
        if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
            return Ok(Some(Credentials {
                username: username.clone(),
                password: password.clone(),
            }));
        }
    }
    match &config.creds_store {
        Some(store) if !store.is_empty() => helper_get(store, host),
        _ => Ok(None),
    }
}

/// Runs `docker-credential-<helper> get` with the registry on stdin, per the credential helper
/// protocol. "Not found" is no credentials, not an error.
fn helper_get(helper: &str, host: &str) -> Result<Option<Credentials>, RegistryError> {
    let failed = |reason: String| RegistryError::Helper {
        helper: helper.to_owned(),
        registry: host.to_owned(),
        reason,
    };
    let program = format!("docker-credential-{helper}");
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
    let server = match host {
        "docker.io" => "https://index.docker.io/v1/",
        other => other,
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(server.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
    if !out.status.success() {
        if String::from_utf8_lossy(&out.stdout).contains("not found") {
            return Ok(None);
        }
        return Err(failed(format!("it exited with {}", out.status)));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Reply {
        username: String,
        secret: String,
    }
    let reply: Reply = serde_json::from_slice(&out.stdout)
        .map_err(|_| failed("its answer is not {\"Username\",\"Secret\"} JSON".into()))?;
    Ok(Some(Credentials {
        username: reply.username,
        password: reply.secret,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenge_gives_realm_and_service() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/a:pull,push""#,
        );
        assert_eq!(
            c,
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="x""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse("Bearer service=x"), None);
    }

    #[test]
    fn docker_config_auths_match_hub_aliases_and_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        let auth = STANDARD.encode("me:s3cret");
        std::fs::write(
            &file,
            format!(r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{auth}"}},"127.0.0.1:5000":{{"auth":"{auth}"}}}}}}"#),
        )
        .unwrap();
        let files = AuthFiles {
            files: vec![file.clone()],
            explicit: Some(file),
        };
        let hub = files.lookup(DOCKER_HUB_API).unwrap().unwrap();
        assert_eq!(
            (hub.username.as_str(), hub.password.as_str()),
            ("me", "s3cret")
        );
        assert!(files.lookup("127.0.0.1:5000").unwrap().is_some());
        assert!(files.lookup("quay.io").unwrap().is_none());
        assert!(!format!("{hub:?}").contains("s3cret"));
    }

    #[test]
    fn malformed_auth_file_error_does_not_quote_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        std::fs::write(&file, r#"{"auths":{"x":{"auth":"s3cret-not-b64!"}}}"#).unwrap();
        let files = AuthFiles {
            files: vec![file.clone()],
            explicit: None,
        };
        let err = files.lookup("x").unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
        let missing = AuthFiles {
            files: vec![dir.path().join("nope.json")],
            explicit: Some(dir.path().join("nope.json")),
        };
        assert!(missing.lookup("x").is_err());
    }
}
