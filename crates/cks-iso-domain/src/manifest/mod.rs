//! Kubernetes manifests as the ISO carries them: edited as text, read as YAML.
//!
//! Upstream manifests are bundled byte-for-byte apart from the documented edits (contract §2, §4):
//! every `imagePullPolicy:` becomes `IfNotPresent` (an air-gapped node cannot pull) and a container
//! that would be pulled `Always` by default gets one ([`insert_if_not_present`]), the
//! autoscaler's and CCM's single `image:` is pinned, and the autoscaler gets the
//! `cluster-autoscaler-extra` RBAC appended. Edits are line-based so comments, key order and
//! formatting survive; YAML is only *parsed*, to check the file and to find every image it needs.
//! No network here.

mod edit;
mod error;
mod images;
mod policy;

pub use edit::{
    AUTOSCALER_EXTRA, JoinedSeparator, append_autoscaler_extra, find_joined_separators,
    image_lines, pin_single_image, pull_if_not_present, split_joined_separators,
};
pub use error::ManifestError;
pub use images::{check_kubernetes, check_yaml, images};
pub use policy::{Container, always_by_default, containers, insert_if_not_present, parsed_always};
