//! The kubelet systemd unit and kubeadm drop-in that go into the ISO.
//!
//! Upstream downloads them from the `main` branch of a side repository, unpinned, and pipes the
//! download through `sed`, so a failed download became an empty unit. For Kubernetes ≥ 1.18 these
//! files have been stable, so cks-iso carries its own copy (as upstream's newest script does) and
//! records `builtin:` as their source in `versions.txt`. Every release cks-iso builds for (1.20 and
//! later, see `release::check_supported`) gets these copies; there is no option to replace
//! them.
//! CKS installs the binaries in `/opt/bin`, so `/usr/bin/` becomes `/opt/bin/` after the text is in
//! hand — never through a pipe that hides a failure.

/// `kubelet.service`, as the kubeadm packages install it (with `/usr/bin`).
pub const KUBELET_SERVICE: &str = "\
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
";

/// `10-kubeadm.conf`, the kubeadm drop-in for the kubelet unit (with `/usr/bin`).
pub const KUBEADM_DROPIN: &str = "\
# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"
Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"
# kubeadm init and kubeadm join write this file at runtime, setting KUBELET_KUBEADM_ARGS.
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# Last-resort overrides of the kubelet flags; prefer .NodeRegistration.KubeletExtraArgs.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
";

/// The source recorded in `versions.txt` for the built-in copies.
pub const BUILTIN_SOURCE: &str = "builtin:cks-iso/kubeadm-units-1.18+";

/// Points the unit text at `/opt/bin`, where CKS installs kubelet.
pub fn to_opt_bin(text: &str) -> String {
    text.replace("/usr/bin/", "/opt/bin/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_units_run_kubelet_from_opt_bin_after_rewrite() {
        for unit in [KUBELET_SERVICE, KUBEADM_DROPIN] {
            let out = to_opt_bin(unit);
            assert!(out.contains("ExecStart=/opt/bin/kubelet"));
            assert!(!out.contains("/usr/bin"));
        }
    }
}
