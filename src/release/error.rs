//! Why a version, pin or listing could not be resolved, with a hint where the user can act.

use super::pktline::PktLineError;
use crate::env;
use crate::fetch::attempts_note;
use cks_iso_domain::release::VersionError;

/// Errors of [`crate::release`] (and of [`crate::pipeline::resolve`], which passes them on).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A version, pin, tag or kubeadm constants file that the pure rules refuse.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// The server could not be reached or the body could not be read.
    #[error("cannot list tags of {shown_url}{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
    Http {
        /// The URL requested.
        url: String,
        /// How many times the listing was tried.
        attempts: u32,
        /// The transport's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{shown_url} answered HTTP {status}{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
    Status {
        /// The URL requested.
        url: String,
        /// How many times the listing was tried.
        attempts: u32,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The server answered but not as a smart git server.
    #[error("{shown_url} is not a smart git HTTP server: {reason}{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
    NotSmart {
        /// The URL requested.
        url: String,
        /// How many times the listing was tried.
        attempts: u32,
        /// What was wrong.
        reason: String,
    },
    /// The reply broke the git protocol.
    #[error("{shown_url} sent an invalid git reply: {reason}{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
    Protocol {
        /// The URL requested.
        url: String,
        /// How many times the listing was tried.
        attempts: u32,
        /// What was wrong.
        reason: String,
    },
    /// The reply was not valid pkt-line.
    #[error("{shown_url} sent an invalid git reply{}", attempts_note(*attempts), shown_url = crate::fetch::redact(url))]
    PktLine {
        /// The URL requested.
        url: String,
        /// How many times the listing was tried.
        attempts: u32,
        /// The framing error.
        #[source]
        source: PktLineError,
    },
    /// The client is offline (`--offline`) and refused the request.
    #[error(transparent)]
    Refused(crate::fetch::FetchError),
}

impl ResolveError {
    /// The same error, saying it came after `n` tries of the listing (its transport variants;
    /// the others are never tried again).
    pub fn after(mut self, n: u32) -> Self {
        match &mut self {
            Self::Http { attempts, .. }
            | Self::Status { attempts, .. }
            | Self::NotSmart { attempts, .. }
            | Self::Protocol { attempts, .. }
            | Self::PktLine { attempts, .. } => *attempts = n,
            Self::Version(_) | Self::Refused(_) => {}
        }
        self
    }

    /// Whether the user gave a wrong value (exit code 2) rather than the run failing.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Version(VersionError::BadVersion { .. })
                | Self::Version(VersionError::TooOld { .. })
                | Self::Version(VersionError::BadAutoscalerPin { .. })
                | Self::Version(VersionError::UnknownAutoscalerRelease { .. })
                | Self::Version(VersionError::BadCcmTag { .. })
        )
    }

    /// Whether another try may succeed (a connection error, 408, 429, 5xx), for the caller's retry.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Http { source, .. } => crate::fetch::retryable_error(source),
            Self::Status { status, .. } => crate::fetch::retryable_status(*status),
            // A reply damaged on the way reads as garbage: ask again before calling it broken.
            Self::Protocol { .. } | Self::PktLine { .. } | Self::NotSmart { .. } => true,
            _ => false,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        let pin = env::AUTOSCALER_VERSION.name;
        Some(match self {
            Self::Version(VersionError::BadVersion { value }) if value.trim() == "latest" => {
                "`latest` may name a pre-release, which CloudStack cannot register: give a \
                 release such as 1.33.1, or a label: stable, stable-1.33, 1.33 (for stable-1.33), \
                 stable-1 or latest-1.33"
                    .into()
            }
            Self::Version(VersionError::BadVersion { .. }) => {
                "give a release such as 1.33.1, or a label: stable, \
                 stable-1.33, 1.33 (for stable-1.33), stable-1 or latest-1.33"
                    .into()
            }
            Self::Version(VersionError::TooOld { .. }) => {
                "build an ISO for Kubernetes 1.20 or later".into()
            }
            Self::Version(VersionError::BadAutoscalerPin { origin, .. }) => {
                format!("give {origin} a release such as 1.33.4")
            }
            Self::Version(VersionError::UnknownAutoscalerRelease { newest, .. }) => match newest {
                Some(n) => format!("the newest release of that minor is {n}; set {pin}={n}"),
                None => format!("unset {pin} to use the newest release of the ISO's minor"),
            },
            Self::Version(VersionError::NoAutoscalerRelease { newest, .. }) => match newest {
                Some(n) => format!(
                    "to build with the newest autoscaler, pass --autoscaler-version {n} (or set \
                     {pin}={n}); it will warn that its minor differs"
                ),
                None => format!(
                    "pass --autoscaler-version (or set {pin}) to an existing cluster-autoscaler \
                     release"
                ),
            },
            Self::Version(VersionError::BadCcmTag { .. }) => format!(
                "set {} to a tag of apache/cloudstack-kubernetes-provider such as v1.2.0",
                env::CCM_VERSION.name
            ),
            Self::Http { .. } => {
                "check the network and HTTPS_PROXY/NO_PROXY, or point --mirror at a reachable \
                 copy of the repository"
                    .into()
            }
            Self::Status { status, .. } if status.as_u16() == 404 => {
                "check the repository URL named above and the --mirror rules that rewrite it".into()
            }
            Self::NotSmart { .. } => {
                "the server must speak git's smart HTTP protocol (git http-backend, GitHub, a \
                 git mirror); a dumb file server is not enough"
                    .into()
            }
            Self::Version(VersionError::Constants { .. }) => {
                "kubeadm's constants file changed shape in this release: a newer cks-iso may read \
                 it; meanwhile build a Kubernetes release this cks-iso knows"
                    .into()
            }
            Self::Refused(err) => return err.hint(),
            Self::Status { .. } | Self::Protocol { .. } | Self::PktLine { .. } => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_minor_hints_the_flag_and_variable_to_pass() {
        let err = ResolveError::from(VersionError::NoAutoscalerRelease {
            minor: "1.32".into(),
            newest: Some("1.31.1".into()),
        });
        let hint = err.hint().unwrap();
        assert!(
            hint.contains("--autoscaler-version 1.31.1")
                && hint.contains("AUTOSCALER_VERSION=1.31.1"),
            "{hint}"
        );
    }
}
