use super::*;

#[test]
fn elf_headers_name_the_architecture() {
    for (arch, machine) in [("amd64", 62u16), ("arm64", 183)] {
        let bin = elf(arch, 7, "x", 4096);
        assert_eq!(&bin[..4], b"\x7fELF");
        assert_eq!(bin[4], 2, "ELF64");
        assert_eq!(u16::from_le_bytes([bin[18], bin[19]]), machine);
        assert_eq!(bin.len(), 4096);
    }
    assert_eq!(elf("amd64", 7, "x", 4096), elf("amd64", 7, "x", 4096));
    assert_ne!(elf("amd64", 7, "x", 4096), elf("amd64", 8, "x", 4096));
}

#[test]
fn snapshot_publishes_checksums_the_way_upstream_does() {
    let files = Snapshot::typical().files();
    let kubeadm = &files["dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm"];
    let sum = &files["dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm.sha256"];
    assert_eq!(
        String::from_utf8_lossy(&sum.body),
        sha256_hex(&kubeadm.body)
    );
    let cni = "github.com/containernetworking/plugins/releases/download/v1.6.2/cni-plugins-linux-arm64-v1.6.2.tgz";
    assert_eq!(
        String::from_utf8_lossy(&files[&format!("{cni}.sha256")].body),
        format!(
            "{}  cni-plugins-linux-arm64-v1.6.2.tgz\n",
            sha256_hex(&files[cni].body)
        )
    );
    assert!(files.contains_key(
        "github.com/containernetworking/plugins/releases/download/v0.7.5/cni-plugins-arm64-v0.7.5.tgz"
    ));
    assert!(!files.contains_key(
        "github.com/containernetworking/plugins/releases/download/v0.7.5/cni-plugins-linux-arm64-v0.7.5.tgz"
    ));
    let sums = String::from_utf8_lossy(
        &files["github.com/etcd-io/etcd/releases/download/v3.5.21/SHA256SUMS"].body,
    )
    .into_owned();
    assert!(
        sums.contains("  etcd-v3.5.21-linux-arm64.tar.gz\n"),
        "{sums}"
    );
    let csi = String::from_utf8_lossy(
        &files["github.com/cloudstack/cloudstack-csi-driver/releases/download/v3.0.0/manifest.yaml"].body,
    )
    .into_owned();
    assert!(csi.contains("rbac.authorization.k8s.io---\n"));
    assert_eq!(csi.matches("image:").count(), 10);
}

#[test]
fn etcd_tarball_has_the_upstream_top_directory() {
    let files = Snapshot::typical().files();
    let body =
        &files["github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-amd64.tar.gz"]
            .body;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(body.as_slice()));
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("etcd-v3.5.21-linux-amd64/")),
        "{names:?}"
    );
    assert!(names.contains(&"etcd-v3.5.21-linux-amd64/etcd".to_string()));
}
