use super::*;

#[test]
fn normalises_like_docker() {
    assert_eq!(normalise("nginx"), "docker.io/library/nginx:latest");
    assert_eq!(normalise("calico/cni:v1"), "docker.io/calico/cni:v1");
    assert_eq!(
        normalise("calico/node:v1@sha256:ab"),
        "docker.io/calico/node:v1@sha256:ab"
    );
    assert_eq!(normalise("quay.io/a/b"), "quay.io/a/b:latest");
    assert_eq!(
        normalise("localhost:5000/x@sha256:ab"),
        "localhost:5000/x@sha256:ab"
    );
    assert_eq!(
        split_reference("127.0.0.1:5000/a/b:t@sha256:x"),
        (
            "127.0.0.1:5000/a/b".into(),
            Some("t".into()),
            Some("sha256:x".into())
        )
    );
}

#[test]
fn kubeadm_list_follows_upstream_rules() {
    let files = default_snapshot("1.33.1").files();
    let list: Vec<String> = kubeadm_images(&files, "1.33.1")
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        list,
        [
            "registry.k8s.io/kube-apiserver:v1.33.1",
            "registry.k8s.io/kube-controller-manager:v1.33.1",
            "registry.k8s.io/kube-scheduler:v1.33.1",
            "registry.k8s.io/kube-proxy:v1.33.1",
            "registry.k8s.io/coredns/coredns:v1.12.0",
            "registry.k8s.io/pause:3.10",
            "registry.k8s.io/etcd:3.5.21-0",
        ]
    );
}

#[test]
fn newest_autoscaler_is_numeric_and_skips_others() {
    let tags = [
        "cluster-autoscaler-1.3.9",
        "cluster-autoscaler-1.30.2",
        "cluster-autoscaler-1.30.10",
        "cluster-autoscaler-1.30.11-rc.1",
        "cluster-autoscaler-chart-9.50.0",
    ];
    assert_eq!(
        newest_autoscaler(&tags, "1.30.4").as_deref(),
        Some("1.30.10")
    );
    assert_eq!(newest_autoscaler(&tags, "1.31.0"), None);
}
