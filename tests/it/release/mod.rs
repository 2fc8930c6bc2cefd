//! Kubernetes releases and what they pin (src/release, the domain's release/ and
//! src/upstream/label.rs): the autoscaler tag chosen over git, kubeadm's image list computed
//! without kubeadm, releases past the embedded table, version labels such as `stable-1.33`.
//! A new test of how a version or its images are worked out goes here.

mod autoscaler_tags;
mod kubeadm_images;
mod kubeadm_releases;
mod version_labels;
