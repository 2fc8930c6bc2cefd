//! Why a version, pin or listing could not be resolved, with a hint where the user can act.

use super::pktline::PktLineError;
use crate::env;

/// Errors of [`crate::release`] (and of [`crate::resolve`], which passes them on).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Not a Kubernetes version.
    #[error("{value:?} is not a Kubernetes version like v1.33.1")]
    BadVersion {
        /// What was given.
        value: String,
    },
    /// The CloudStack autoscaler example does not exist for this Kubernetes.
    #[error(
        "Kubernetes {version} is too old: the CloudStack autoscaler example exists from 1.20 on"
    )]
    TooOld {
        /// The version given.
        version: String,
    },
    /// `--autoscaler-version` or `AUTOSCALER_VERSION` is not `X.Y.Z`.
    #[error("{origin} {value:?} is not an autoscaler release like 1.33.4 (1.20.0 or later)")]
    BadAutoscalerPin {
        /// What was given.
        value: String,
        /// The flag or variable it was given with.
        origin: &'static str,
    },
    /// The pinned autoscaler release has no tag upstream.
    #[error("there is no tag cluster-autoscaler-{version} upstream")]
    UnknownAutoscalerRelease {
        /// The pin.
        version: String,
        /// The newest release of the same minor, if any.
        newest: Option<String>,
    },
    /// No `cluster-autoscaler-<minor>.Z` release exists yet.
    #[error(
        "no cluster-autoscaler release for Kubernetes {minor} upstream{}",
        newest.as_ref().map_or(String::new(), |n| format!("; the newest release is {n}"))
    )]
    NoAutoscalerRelease {
        /// `major.minor` of the ISO.
        minor: String,
        /// The newest release of any minor, if any.
        newest: Option<String>,
    },
    /// `CCM_VERSION` is not a tag.
    #[error("CCM_VERSION={value:?} is not a tag like v1.2.0")]
    BadCcmTag {
        /// What was given.
        value: String,
    },
    /// The server could not be reached or the body could not be read.
    #[error("cannot list tags of {shown_url}", shown_url = crate::fetch::redact(url))]
    Http {
        /// The URL requested.
        url: String,
        /// The transport's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{shown_url} answered HTTP {status}", shown_url = crate::fetch::redact(url))]
    Status {
        /// The URL requested.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The server answered but not as a smart git server.
    #[error("{shown_url} is not a smart git HTTP server: {reason}", shown_url = crate::fetch::redact(url))]
    NotSmart {
        /// The URL requested.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The reply broke the git protocol.
    #[error("{shown_url} sent an invalid git reply: {reason}", shown_url = crate::fetch::redact(url))]
    Protocol {
        /// The URL requested.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// The reply was not valid pkt-line.
    #[error("{shown_url} sent an invalid git reply", shown_url = crate::fetch::redact(url))]
    PktLine {
        /// The URL requested.
        url: String,
        /// The framing error.
        #[source]
        source: PktLineError,
    },
    /// kubeadm's constants source lacks a value or writes it in a form cks-iso cannot read.
    #[error("kubeadm constants for Kubernetes 1.{minor}: {what}")]
    Constants {
        /// The Kubernetes minor.
        minor: u64,
        /// The constant that is missing or the construct that was not understood.
        what: super::kubeadm::Unreadable,
    },
    /// The client is offline (`--offline`) and refused the request.
    #[error(transparent)]
    Refused(crate::fetch::FetchError),
}

impl ResolveError {
    /// Whether the user gave a wrong value (exit code 2) rather than the run failing.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::BadVersion { .. }
                | Self::TooOld { .. }
                | Self::BadAutoscalerPin { .. }
                | Self::UnknownAutoscalerRelease { .. }
                | Self::BadCcmTag { .. }
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
            Self::BadVersion { value } if value.trim() == "latest" => {
                "`latest` may name a pre-release, which CloudStack cannot register: give a \
                 release such as 1.33.1, or a label: stable, stable-1.33, 1.33 (for stable-1.33), \
                 stable-1 or latest-1.33"
                    .into()
            }
            Self::BadVersion { .. } => "give a release such as 1.33.1, or a label: stable, \
                 stable-1.33, 1.33 (for stable-1.33), stable-1 or latest-1.33"
                .into(),
            Self::TooOld { .. } => "build an ISO for Kubernetes 1.20 or later".into(),
            Self::BadAutoscalerPin { origin, .. } => {
                format!("give {origin} a release such as 1.33.4")
            }
            Self::UnknownAutoscalerRelease { newest, .. } => match newest {
                Some(n) => format!("the newest release of that minor is {n}; set {pin}={n}"),
                None => format!("unset {pin} to use the newest release of the ISO's minor"),
            },
            Self::NoAutoscalerRelease { newest, .. } => match newest {
                Some(n) => format!(
                    "to build with the newest autoscaler, pass --autoscaler-version {n} (or set \
                     {pin}={n}); it will warn that its minor differs"
                ),
                None => format!(
                    "pass --autoscaler-version (or set {pin}) to an existing cluster-autoscaler \
                     release"
                ),
            },
            Self::BadCcmTag { .. } => format!(
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
            Self::Constants { .. } => {
                "kubeadm's constants file changed shape in this release: a newer cks-iso may read \
                 it; meanwhile build a Kubernetes release this cks-iso knows"
                    .into()
            }
            Self::Refused(err) => return err.hint(),
            Self::Status { .. } | Self::Protocol { .. } | Self::PktLine { .. } => return None,
        })
    }
}
