//! Why an image could not be pulled, naming the image (and the blob); never a credential.

use crate::cache::CacheError;
use crate::fetch::FetchError;
use crate::image::{Digest, ImageError};

/// Errors of [`crate::registry`].
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry does not have the repository, tag or digest.
    #[error("{reference}: not found in {registry}")]
    NotFound {
        /// The full reference.
        reference: String,
        /// The registry (or mirror) asked.
        registry: String,
    },
    /// The registry refused us: bad or missing credentials, or no pull access.
    #[error("{reference}: {registry} refused access ({reason})")]
    Auth {
        /// The full reference.
        reference: String,
        /// The registry (or token service) that refused.
        registry: String,
        /// What went wrong, without any secret.
        reason: String,
    },
    /// An HTTPS registry names a plain-HTTP token service: the credentials are not sent there.
    #[error(
        "{reference}: {registry} asks for its credentials at {url}, over plain HTTP; they are not \
         sent there"
    )]
    PlainHttp {
        /// The full reference.
        reference: String,
        /// The registry (or mirror) whose challenge named the realm.
        registry: String,
        /// The realm, without any user.
        url: String,
    },
    /// The token service redirected an identity token's exchange where the token may not go.
    #[error(
        "{reference}: the token service {registry} redirects the identity token (HTTP {status}) \
         to {location}, where it is not sent: {reason}"
    )]
    TokenRedirect {
        /// The full reference.
        reference: String,
        /// The token service (`host[:port]` of the challenge's realm).
        registry: String,
        /// The 3xx status.
        status: u16,
        /// Where it leads, without any user.
        location: String,
        /// Why it is not followed.
        reason: String,
    },
    /// A transfer failed (after retries).
    #[error("{reference}: cannot fetch {what}")]
    Fetch {
        /// The full reference.
        reference: String,
        /// What was being fetched (`manifest v1.0`, `layer 2 of 3 sha256:…`).
        what: String,
        /// The transport's error.
        #[source]
        source: FetchError,
    },
    /// A downloaded blob is not what its digest names, also after downloading it again.
    #[error(
        "{reference}: {what} does not match: expected {expected} ({}), got {actual} ({}) from the \
         registry",
        indicatif::HumanBytes(*expected_size),
        indicatif::HumanBytes(*actual_size)
    )]
    Mismatch {
        /// The full reference.
        reference: String,
        /// Which blob (`config`, `layer 2 of 3`, `manifest`).
        what: String,
        /// The digest that names it.
        expected: Digest,
        /// The digest of what arrived.
        actual: Digest,
        /// The size its descriptor gives.
        expected_size: u64,
        /// The bytes that arrived.
        actual_size: u64,
    },
    /// The registry could not be asked at all; the first image that tried has the details.
    #[error("{reference}: {registry} cannot be reached ({reason})")]
    Unreachable {
        /// The full reference.
        reference: String,
        /// The registry (or mirror).
        registry: String,
        /// The first failure, with its causes.
        reason: String,
        /// What the user can do, as for the first failure.
        hint: Option<String>,
    },
    /// A blob this image shares with another image of the run failed when that image fetched
    /// it; it was not fetched again.
    #[error("{reference}: {what} failed for another image of this run: {reason}")]
    SharedBlob {
        /// The full reference.
        reference: String,
        /// Which blob, with its digest.
        what: String,
        /// The first failure, with the image it happened for.
        reason: String,
        /// What the user can do, as for the first failure.
        hint: Option<String>,
    },
    /// The registry's answer makes no sense (a token reply without a token, a bad challenge).
    #[error("{reference}: {registry} answered unexpectedly: {reason}")]
    Protocol {
        /// The full reference.
        reference: String,
        /// The registry.
        registry: String,
        /// What was wrong.
        reason: String,
    },
    /// A push target refused a blob or a manifest (`cks-iso push`).
    #[error(
        "{reference}: {registry} refused {what}: HTTP {status}{}",
        answer_of(answer)
    )]
    Refused {
        /// The image being pushed, as the source names it.
        reference: String,
        /// The target registry.
        registry: String,
        /// What was refused, with its digest (`layer sha256:…`, `manifest sha256:…`).
        what: String,
        /// The status of the registry's answer.
        status: u16,
        /// The registry's own words (its `errors` body, trimmed), empty when it gave none.
        answer: String,
    },
    /// The image itself cannot be used (no image for the platform, bad manifest, wrong digest).
    #[error(transparent)]
    Image(#[from] ImageError),
    /// The blob cache failed.
    #[error("{reference}: the cache failed")]
    Cache {
        /// The full reference.
        reference: String,
        /// What the cache said.
        #[source]
        source: CacheError,
    },
    /// An auth file cannot be read, or is refused (see `crate::input`).
    #[error("cannot read {}{}", if *explicit { "--authfile " } else { "the auth file " }, path.display())]
    AuthFile {
        /// The file.
        path: std::path::PathBuf,
        /// Whether it was named with `--authfile` (or `authfile:`).
        explicit: bool,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A configuration value (mirror, insecure registry, auth file) is malformed.
    #[error("{0}")]
    Config(String),
}

impl RegistryError {
    /// Whether the user gave a wrong argument or setting rather than the pull failing.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Config(_) | Self::AuthFile { .. } => true,
            Self::Image(e) => e.is_usage(),
            _ => false,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::NotFound { .. } => {
                "check the name, tag and digest; behind a registry mirror (--registry-mirror), \
                 check that it holds the image"
                    .into()
            }
            Self::Auth { .. } => crate::fetch::AUTH_HINT.into(),
            Self::PlainHttp { .. } => {
                "the registry's configuration sends logins in clear text: have its operator serve \
                 the token service over HTTPS; only on a network you trust, name that host with \
                 --insecure-registry HOST[:PORT]"
                    .into()
            }
            Self::TokenRedirect { .. } => {
                "an identity token is sent only to the token service the registry's challenge \
                 names, on its own host and never over plain HTTP: have the registry's operator \
                 name the final token service in the challenge, or log in with a user name and \
                 password instead"
                    .into()
            }
            Self::Mismatch { .. } => {
                "the registry or a proxy on the way serves corrupt bytes; try again later, or \
                 pull through another registry mirror (--registry-mirror REGISTRY=URL)"
                    .into()
            }
            Self::Config(_) => {
                "fix that file, or pass --authfile a Docker config.json whose `auths` hold \
                 base64 user:password"
                    .into()
            }
            Self::AuthFile { path, source, .. } => {
                return crate::input::hint(source, path, "a Docker config.json or auth.json")
                    .or_else(|| {
                        Some("check --authfile; leave it out to use the default auth files".into())
                    });
            }
            Self::Fetch { source, .. } => return source.hint(),
            Self::Unreachable { hint, .. } | Self::SharedBlob { hint, .. } => {
                return hint.clone();
            }
            Self::Image(e) => return e.hint(),
            Self::Cache { source, .. } => return source.hint(),
            Self::Protocol { .. } => return None,
            Self::Refused {
                status: 401 | 403, ..
            } => crate::fetch::AUTH_HINT.into(),
            Self::Refused { .. } => {
                "the registry's answer says why; check the target's quota, the media types it \
                 accepts and the push rights of the credentials, then push again: what is \
                 already there is not uploaded twice"
                    .into()
            }
        })
    }
}

/// `: <answer>` when the registry said something.
fn answer_of(answer: &str) -> String {
    match answer.is_empty() {
        true => String::new(),
        false => format!(": {answer}"),
    }
}
