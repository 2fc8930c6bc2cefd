//! Why a Kubernetes version, an autoscaler pin, a CCM tag or kubeadm's constants could not be
//! read: the errors of this module's pure rules. The network side's `ResolveError` carries them
//! unchanged (its `Version` variant) and adds the hints, which name environment variables.

/// An error of [`crate::release`].
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
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
    /// kubeadm's constants source lacks a value or writes it in a form cks-iso cannot read.
    #[error("kubeadm constants for Kubernetes 1.{minor}: {what}")]
    Constants {
        /// The Kubernetes minor.
        minor: u64,
        /// The constant that is missing or the construct that was not understood.
        what: super::kubeadm::Unreadable,
    },
}
