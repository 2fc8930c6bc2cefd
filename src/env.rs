//! Every environment variable cks-iso reads, in one place, so the reference table
//! (`docs/reference/environment.md`) and the code cannot drift apart. Other modules call the
//! accessors here instead of `std::env::var`.

use std::ffi::OsString;

/// An environment variable cks-iso reads, with what it does.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// Its name.
    pub name: &'static str,
    /// What it does: its row of `docs/reference/environment.md`, word for word (a test checks).
    pub about: &'static str,
}

/// Seconds since the epoch that date every entry of the ISO (reproducible builds).
pub const SOURCE_DATE_EPOCH: Var = Var {
    name: "SOURCE_DATE_EPOCH",
    about: "dates the ISO and every entry in it (seconds since 1970): the same tree and epoch give a byte-identical ISO; `--source-date-epoch` overrides it. Unset, `build` dates by content (the lock's epoch, else kubeadm's images' newest `created`), `iso` by the clock",
};

/// Disables colour when set to anything non-empty (<https://no-color.org>).
pub const NO_COLOR: Var = Var {
    name: "NO_COLOR",
    about: "disables colour when set and not empty",
};

/// A `tracing` filter for the log lines on stderr, overriding `-q`/`-v`.
pub const CKS_ISO_LOG: Var = Var {
    name: "CKS_ISO_LOG",
    about: "log filter for stderr, e.g. `debug` or `cks_iso::registry=trace`; overrides `-q`/`-v`",
};

/// Pins the cluster-autoscaler release instead of the newest one of the ISO's minor.
pub const AUTOSCALER_VERSION: Var = Var {
    name: "AUTOSCALER_VERSION",
    about: "exact cluster-autoscaler release for `resolve` and `build`, e.g. `1.33.4` (`v` optional); default: the newest release for the ISO's Kubernetes minor; `--autoscaler-version` overrides it",
};

/// Picks the CloudStack CCM tag instead of the default.
pub const CCM_VERSION: Var = Var {
    name: "CCM_VERSION",
    about: "CloudStack CCM tag for `resolve` and `build`, e.g. `v1.3.0-rc1` (`v` optional); default `v1.2.0`; `--ccm-version` overrides it",
};

/// Where the blob cache lives (`$XDG_CACHE_HOME/cks-iso`), per the XDG base directory spec.
pub const XDG_CACHE_HOME: Var = Var {
    name: "XDG_CACHE_HOME",
    about: "the cache is `$XDG_CACHE_HOME/cks-iso` (an absolute path), else `~/.cache/cks-iso`",
};

/// Where `podman login` writes its credentials (`$XDG_RUNTIME_DIR/containers/auth.json`).
pub const XDG_RUNTIME_DIR: Var = Var {
    name: "XDG_RUNTIME_DIR",
    about: "`$XDG_RUNTIME_DIR/containers/auth.json` (where `podman login` writes) gives registry credentials, after `--authfile` and `REGISTRY_AUTH_FILE`",
};

/// The user's configuration directory: the default configuration file and Podman's read-only
/// auth file live under it.
pub const XDG_CONFIG_HOME: Var = Var {
    name: "XDG_CONFIG_HOME",
    about: "an absolute path, else `~/.config`: `$XDG_CONFIG_HOME/cks-iso/config.yaml` is the default configuration file; `$XDG_CONFIG_HOME/containers/auth.json` gives registry credentials, after `$XDG_RUNTIME_DIR/containers/auth.json`",
};

/// The user's home, for the default cache directory when `XDG_CACHE_HOME` is unset.
pub const HOME: Var = Var {
    name: "HOME",
    about: "the default cache is `$HOME/.cache/cks-iso` when `XDG_CACHE_HOME` is unset; `$HOME/.config` is the default `XDG_CONFIG_HOME`; `$HOME/.docker/config.json` gives registry credentials",
};

/// Where temporary work directories go (read through `std::env::temp_dir`).
pub const TMPDIR: Var = Var {
    name: "TMPDIR",
    about: "where `build` stages each ISO's tree before writing it (default `/tmp`); needs room for the images; `doctor` checks it",
};

/// The configuration file, when `--config` is not given.
pub const CKS_ISO_CONFIG: Var = Var {
    name: "CKS_ISO_CONFIG",
    about: "the YAML configuration file (mirrors, registries, CA files, auth file, jobs, retries, timeouts) when `--config` is not given; unset, the first of `$XDG_CONFIG_HOME/cks-iso/config.yaml` (else `~/.config/…`) and `/etc/cks-iso/config.yaml` that exists",
};

/// Proxy for `https://` URLs, read by the HTTP client (also `https_proxy`).
pub const HTTPS_PROXY: Var = Var {
    name: "HTTPS_PROXY",
    about: "proxy for `https://` requests (also `https_proxy`), read by the HTTP client",
};

/// Proxy for `http://` URLs, read by the HTTP client (also `http_proxy`).
pub const HTTP_PROXY: Var = Var {
    name: "HTTP_PROXY",
    about: "proxy for `http://` requests (also `http_proxy`)",
};

/// Hosts reached without the proxy, read by the HTTP client (also `no_proxy`).
pub const NO_PROXY: Var = Var {
    name: "NO_PROXY",
    about: "comma-separated hosts reached directly, bypassing the proxy (also `no_proxy`)",
};

/// Proxy for every scheme without its own variable, read by the HTTP client (also `all_proxy`).
pub const ALL_PROXY: Var = Var {
    name: "ALL_PROXY",
    about: "proxy for requests `HTTPS_PROXY`/`HTTP_PROXY` do not cover (also `all_proxy`), read by the HTTP client",
};

/// A PEM bundle replacing the system's CA store, read by the TLS stack (rustls-native-certs).
pub const SSL_CERT_FILE: Var = Var {
    name: "SSL_CERT_FILE",
    about: "a PEM file of CA certificates the TLS client trusts instead of the system store (with `SSL_CERT_DIR`, both); the built-in Mozilla roots and `--ca-file` still apply",
};

/// Directories of CA certificates replacing the system's store, read by the TLS stack.
pub const SSL_CERT_DIR: Var = Var {
    name: "SSL_CERT_DIR",
    about: "colon-separated directories of CA certificates the TLS client trusts instead of the system store",
};

/// Where the Docker client keeps `config.json`, read for registry credentials.
pub const DOCKER_CONFIG: Var = Var {
    name: "DOCKER_CONFIG",
    about: "directory of the Docker `config.json` whose `auths`, `credHelpers` and `credsStore` give registry credentials, read last; default `~/.docker`",
};

/// A Podman/skopeo auth file, read for registry credentials before the Docker config.
pub const REGISTRY_AUTH_FILE: Var = Var {
    name: "REGISTRY_AUTH_FILE",
    about: "a Podman/skopeo `auth.json` read for registry credentials before Podman's default files and the Docker config; `--authfile` comes first",
};

/// The signature mode of `build`, when `--signatures` is not given (read by clap).
pub const CKS_ISO_SIGNATURES: Var = Var {
    name: "CKS_ISO_SIGNATURES",
    about: "`off`, `verify` or `enforce`: how `build` treats Sigstore signatures of registry.k8s.io images and dl.k8s.io binaries when --signatures is not given",
};

/// The CloudStack release `build` makes ISOs for, when `--cloudstack` is not given (read by clap).
pub const CKS_ISO_CLOUDSTACK: Var = Var {
    name: "CKS_ISO_CLOUDSTACK",
    about: "the CloudStack release (`4.20`, `4.21`, `4.22`, `4.23` or `24`) `build` makes ISOs for when --cloudstack is not given; the configuration file's `cloudstack:` comes after it",
};

/// The Rekor server `build` asks for dl.k8s.io binaries' log entries (read by clap).
pub const CKS_ISO_REKOR_URL: Var = Var {
    name: "CKS_ISO_REKOR_URL",
    about: "the Rekor server `build` looks up Kubernetes binaries' signatures in, when --rekor-url is not given; default `https://rekor.sigstore.dev` (through the mirrors like any URL)",
};

/// How long a credential helper may take before it is stopped.
pub const CKS_ISO_HELPER_TIMEOUT: Var = Var {
    name: "CKS_ISO_HELPER_TIMEOUT",
    about: "seconds a credential helper (`docker-credential-<name> get`) may take before it is stopped and the search for credentials goes on without it; default 60",
};

/// The CloudStack API endpoint `register` and `versions` talk to (see docs/guide/registration.md).
pub const CKS_ISO_CLOUDSTACK_URL: Var = Var {
    name: "CKS_ISO_CLOUDSTACK_URL",
    about: "the CloudStack API endpoint (`https://HOST/client/api`) for `register`, `build --register` and `versions`, with `CKS_ISO_CLOUDSTACK_API_KEY` and `CKS_ISO_CLOUDSTACK_SECRET_KEY`; after the flags, before `~/.cmk/config` (docs/guide/registration.md)",
};

/// The API key for [`CKS_ISO_CLOUDSTACK_URL`].
pub const CKS_ISO_CLOUDSTACK_API_KEY: Var = Var {
    name: "CKS_ISO_CLOUDSTACK_API_KEY",
    about: "the API key for `CKS_ISO_CLOUDSTACK_URL` (never printed)",
};

/// The secret key for [`CKS_ISO_CLOUDSTACK_URL`].
pub const CKS_ISO_CLOUDSTACK_SECRET_KEY: Var = Var {
    name: "CKS_ISO_CLOUDSTACK_SECRET_KEY",
    about: "the secret key for `CKS_ISO_CLOUDSTACK_URL` (never printed)",
};

/// The Python `cs` client's endpoint, read as it reads it.
pub const CLOUDSTACK_ENDPOINT: Var = Var {
    name: "CLOUDSTACK_ENDPOINT",
    about: "the `cs` client's API endpoint, with `CLOUDSTACK_KEY` and `CLOUDSTACK_SECRET`: used by `register` and `versions` when no flag, `CKS_ISO_CLOUDSTACK_*` or `~/.cmk/config` gives credentials",
};

/// The Python `cs` client's API key.
pub const CLOUDSTACK_KEY: Var = Var {
    name: "CLOUDSTACK_KEY",
    about: "the `cs` client's API key (never printed)",
};

/// The Python `cs` client's secret key.
pub const CLOUDSTACK_SECRET: Var = Var {
    name: "CLOUDSTACK_SECRET",
    about: "the `cs` client's secret key (never printed)",
};

/// The Python `cs` client's INI file, read instead of `~/.cloudstack.ini` (never merged with it).
pub const CLOUDSTACK_CONFIG: Var = Var {
    name: "CLOUDSTACK_CONFIG",
    about: "the one `cs` client INI file `register` and `versions` read for credentials, instead of `~/.cloudstack.ini` (the last place they look); `./cloudstack.ini` is read only when this names it",
};

/// The section of the `cs` client's INI files.
pub const CLOUDSTACK_REGION: Var = Var {
    name: "CLOUDSTACK_REGION",
    about: "the section of the `cs` client's INI files to read (default `cloudstack`)",
};

/// The password of a cosign encrypted signing key, as cosign reads it.
pub const COSIGN_PASSWORD: Var = Var {
    name: "COSIGN_PASSWORD",
    about: "the password of a cosign encrypted key (`ENCRYPTED SIGSTORE PRIVATE KEY`) given to `build --sign-key` or `sign --key`; set and empty is an empty password; unset, it is asked for on the terminal without echo, and refused without one (never printed)",
};

/// The OIDC identity token of keyless signing, as Sigstore's clients read it.
pub const SIGSTORE_ID_TOKEN: Var = Var {
    name: "SIGSTORE_ID_TOKEN",
    about: "the OIDC identity token `build --sign`, `sign` and `sync` (`sign: keyless`) sign keyless with, when `--identity-token` is not given; for `sync`, over the desired state's `identity-token-file:` (never printed)",
};

/// Every variable above, in the order `docs/reference/environment.md` lists them.
pub const ALL: &[Var] = &[
    SOURCE_DATE_EPOCH,
    NO_COLOR,
    CKS_ISO_LOG,
    AUTOSCALER_VERSION,
    CCM_VERSION,
    CKS_ISO_CONFIG,
    CKS_ISO_SIGNATURES,
    CKS_ISO_CLOUDSTACK,
    CKS_ISO_REKOR_URL,
    CKS_ISO_HELPER_TIMEOUT,
    CKS_ISO_CLOUDSTACK_URL,
    CKS_ISO_CLOUDSTACK_API_KEY,
    CKS_ISO_CLOUDSTACK_SECRET_KEY,
    CLOUDSTACK_ENDPOINT,
    CLOUDSTACK_KEY,
    CLOUDSTACK_SECRET,
    CLOUDSTACK_CONFIG,
    CLOUDSTACK_REGION,
    COSIGN_PASSWORD,
    SIGSTORE_ID_TOKEN,
    HTTPS_PROXY,
    HTTP_PROXY,
    ALL_PROXY,
    NO_PROXY,
    SSL_CERT_FILE,
    SSL_CERT_DIR,
    XDG_CACHE_HOME,
    HOME,
    TMPDIR,
    DOCKER_CONFIG,
    REGISTRY_AUTH_FILE,
    XDG_RUNTIME_DIR,
    XDG_CONFIG_HOME,
];

impl Var {
    /// The value, if set (also when empty).
    pub fn get_os(&self) -> Option<OsString> {
        std::env::var_os(self.name)
    }

    /// The value, if set, not empty and valid UTF-8.
    pub fn get(&self) -> Option<String> {
        std::env::var(self.name).ok().filter(|v| !v.is_empty())
    }
}

/// The hint for a malformed `SOURCE_DATE_EPOCH`, wherever it is read.
pub(crate) const EPOCH_HINT: &str = "set SOURCE_DATE_EPOCH to seconds since 1970-01-01 UTC, e.g. $(git log -1 --format=%ct), or unset it";

/// `SOURCE_DATE_EPOCH` set to something other than a whole number of seconds; holds the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SOURCE_DATE_EPOCH={0:?} is not a whole number of seconds")]
pub struct BadEpoch(pub String);

/// The one reading of `SOURCE_DATE_EPOCH`: `None` when unset or empty, surrounding whitespace
/// ignored. Each command decides its own default (now, the lock's epoch, 0) from `None`.
pub fn source_date_epoch() -> Result<Option<i64>, BadEpoch> {
    SOURCE_DATE_EPOCH
        .get()
        .map(|value| value.trim().parse().map_err(|_| BadEpoch(value)))
        .transpose()
}

/// The date given for an ISO: `flag` (`--source-date-epoch`), else `SOURCE_DATE_EPOCH`, else
/// none (`build` then dates by content: `lock::epoch`).
pub fn given_epoch(flag: Option<i64>) -> Result<Option<i64>, BadEpoch> {
    match flag {
        Some(epoch) => Ok(Some(epoch)),
        None => source_date_epoch(),
    }
}

/// The date of `cks-iso iso`'s entries: the date given ([`given_epoch`]), else now.
pub fn epoch_or_now(flag: Option<i64>) -> Result<i64, BadEpoch> {
    if let Some(epoch) = given_epoch(flag)? {
        return Ok(epoch);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(i64::try_from(now).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    /// The rows of the environment table in `docs/reference/environment.md`: `(name, effect)`.
    fn reference_rows() -> Vec<(String, String)> {
        let page = include_str!("../docs/reference/environment.md");
        page.lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line
                    .strip_prefix('|')?
                    .strip_suffix('|')?
                    .split(" | ")
                    .collect();
                let name = cells.first()?.trim().strip_prefix('`')?.strip_suffix('`')?;
                Some((name.to_owned(), cells[1..].join(" | ").trim().to_owned()))
            })
            .collect()
    }

    #[test]
    fn reference_environment_table_is_env_rs_row_by_row() {
        let rows = reference_rows();
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        let want: Vec<&str> = super::ALL.iter().map(|v| v.name).collect();
        assert_eq!(
            names, want,
            "docs/reference/environment.md must list each variable of env.rs once, in env::ALL's order, and no others"
        );
        for ((name, effect), var) in rows.iter().zip(super::ALL) {
            assert_eq!(
                effect, var.about,
                "docs/reference/environment.md's row of {name} differs from env.rs"
            );
        }
    }
}
