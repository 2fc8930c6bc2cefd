//! The generated content itself: ELF executables, gzip tarballs, kubeadm's `constants.go` and
//! the manifests filled from the fixtures, deterministic from their seeds.

use super::*;

pub(super) const TEXT: &str = "text/plain; charset=utf-8";
pub(super) const BINARY: &str = "application/octet-stream";

/// Before 0.8.0 the CNI plugins were published as `cni-plugins-<arch>-v<V>.tgz`.
pub(super) fn legacy_cni(v: &str) -> bool {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) < (0, 8)
}

/// The lowercase hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// splitmix64: a tiny deterministic byte stream, seeded per file.
pub(super) struct Rng(u64);

impl Rng {
    fn for_file(seed: u64, name: &str) -> Self {
        let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        Self(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// `e_machine` of an architecture: EM_X86_64 (62) or EM_AARCH64 (183).
pub fn e_machine(arch: &str) -> u16 {
    match arch {
        "amd64" => 62,
        "arm64" => 183,
        other => panic!("no ELF machine for {other}"),
    }
}

/// A static ELF64 little-endian executable for `arch`, `len` bytes: a valid header and one
/// `PT_LOAD` program header, then seeded bytes.
pub fn elf(arch: &str, seed: u64, name: &str, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len.max(120));
    out.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]); // ELF64, LE, version 1, SysV
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&2u16.to_le_bytes()); // e_type ET_EXEC
    out.extend_from_slice(&e_machine(arch).to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes()); // e_version
    out.extend_from_slice(&0x40_0078u64.to_le_bytes()); // e_entry
    out.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    out.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    out.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    out.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    out.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    out.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    out.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    out.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    out.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    // PT_LOAD, R+X, the whole file at 0x400000.
    let size = len.max(120) as u64;
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&5u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&0x40_0000u64.to_le_bytes());
    out.extend_from_slice(&0x40_0000u64.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&0x1000u64.to_le_bytes());
    let start = out.len();
    out.resize(size as usize, 0);
    Rng::for_file(seed, name).fill(&mut out[start..]);
    out
}

/// A gzip tarball of `(path, bytes, mode)` entries with fixed owners and times.
pub fn tgz(entries: &[(String, Vec<u8>, u32)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (path, data, mode) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(1_700_000_000);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, data.as_slice())
            .expect("append to an in-memory tar");
    }
    let mut gz = builder.into_inner().expect("finish tar");
    gz.flush().expect("flush gzip");
    gz.finish().expect("finish gzip")
}

/// `constants_unix.go` of a release that declares `PauseVersion` there (1.20): a build-tagged
/// file with a small const block. Written for the fixtures, in that shape.
pub(super) fn constants_unix_go(k: &KubeRelease) -> String {
    format!(
        "// +build !windows\n\npackage constants\n\n\
         const (\n\
         \t// DefaultDockerCRISocket is the CRI socket kubeadm uses with Docker on Linux\n\
         \tDefaultDockerCRISocket = \"/var/run/dockershim.sock\"\n\n\
         \t// PauseVersion indicates the default pause image version for kubeadm\n\
         \tPauseVersion = \"{pause}\"\n\
         )\n",
        pause = k.pause,
    )
}

/// `constants.go` of a release, in the form kubeadm of that minor writes its etcd map: keys
/// computed from kubeadm's own version for every 1.35 release (kubernetes PR #134866, the previous
/// and the own minor), literal minors before and after (PR #135589 went back to them for 1.36).
pub(super) fn constants_go(k: &KubeRelease) -> String {
    let minor = k.minor();
    let mut map = String::new();
    if minor == 35 {
        for skew in [-1, 0] {
            map.push_str(&format!(
                "\t\tuint8(getSkewedKubernetesVersion({skew}).Minor()): \"{}\",\n",
                k.etcd
            ));
        }
    } else {
        for m in minor.saturating_sub(2)..=minor {
            map.push_str(&format!("\t\t{m}: \"{}\",\n", k.etcd));
        }
    }
    // 1.20 keeps PauseVersion in constants_unix.go instead.
    let pause = match k.pause_in_constants_unix() {
        true => String::new(),
        false => format!(
            "\n\t// PauseVersion indicates the default pause image version for kubeadm\n\
             \tPauseVersion = \"{}\"\n",
            k.pause
        ),
    };
    format!(
        "/*\nCopyright 2016 The Kubernetes Authors.\n*/\n\npackage constants\n\n\
         const (\n\
         \t// DefaultEtcdVersion indicates the default etcd version that kubeadm uses\n\
         \tDefaultEtcdVersion = \"{etcd}\"\n\n\
         \t// CoreDNSVersion is the version of CoreDNS to be deployed if it is used\n\
         \tCoreDNSVersion = \"{coredns}\"\n{pause}\
         )\n\n\
         var (\n\
         \t// SupportedEtcdVersion lists officially supported etcd versions with corresponding Kubernetes releases\n\
         \tSupportedEtcdVersion = map[uint8]string{{\n{map}\t}}\n\
         )\n",
        etcd = k.etcd,
        coredns = k.coredns,
    )
}

/// The autoscaler image the CloudStack example names at tag `1.minor.x`.
pub fn autoscaler_example_image(version: &str) -> &'static str {
    match minor_patch(version) {
        Some((minor, _)) if minor <= 22 => "shapeblue/cloudstack-k8s-autoscaler:v1.0.0",
        _ => "apache/cloudstack-kubernetes-autoscaler:latest",
    }
}

pub(super) const AUTOSCALER_EXAMPLE: &str =
    include_str!("../../../fixtures/upstream/autoscaler-example.yaml.in");

pub(super) fn autoscaler_example(version: &str) -> String {
    let image = autoscaler_example_image(version);
    let policy = match minor_patch(version) {
        Some((minor, _)) if minor <= 22 => "Always",
        _ => "IfNotPresent",
    };
    fill(AUTOSCALER_EXAMPLE, &[("image", image), ("policy", policy)])
}

pub(super) const CCM_DEPLOYMENT: &str =
    include_str!("../../../fixtures/upstream/ccm-deployment.yaml.in");

pub(super) fn ccm_deployment(tag: &str) -> String {
    // A tag's manifest does not always name its own image (iso-contract.md §4): v1.2.0 names v1.1.0.
    let named = if tag == "v1.2.0" { "v1.1.0" } else { tag };
    fill(CCM_DEPLOYMENT, &[("named", named)])
}

/// The distinct images the CSI manifest fixture names (8, on 10 `image:` lines).
pub const CSI_IMAGES: [&str; 8] = [
    "ghcr.io/cloudstack/cloudstack-csi-driver:3.0.0",
    "registry.k8s.io/sig-storage/csi-provisioner:v4.0.1",
    "registry.k8s.io/sig-storage/csi-attacher:v4.5.1",
    "registry.k8s.io/sig-storage/csi-resizer:v1.10.1",
    "registry.k8s.io/sig-storage/csi-snapshotter:v7.0.2",
    "registry.k8s.io/sig-storage/livenessprobe:v2.12.0",
    "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.10.1",
    "registry.k8s.io/sig-storage/snapshot-controller:v7.0.2",
];

pub(super) const CSI_MANIFEST: &str =
    include_str!("../../../fixtures/upstream/csi-manifest.yaml.in");

pub(super) fn csi_manifest(tag: &str) -> String {
    let driver = format!(
        "ghcr.io/cloudstack/cloudstack-csi-driver:{}",
        tag.trim_start_matches('v')
    );
    let [
        _,
        provisioner,
        attacher,
        resizer,
        snapshotter,
        liveness,
        registrar,
        snapctl,
    ] = CSI_IMAGES;
    // The ClusterRoleBinding part lacks its final newline, so the next `---` is glued to
    // `rbac.authorization.k8s.io` — upstream's defect (docs/reference/upstream.md §4).
    fill(
        CSI_MANIFEST,
        &[
            ("driver", &driver),
            ("provisioner", provisioner),
            ("attacher", attacher),
            ("resizer", resizer),
            ("snapshotter", snapshotter),
            ("liveness", liveness),
            ("registrar", registrar),
            ("snapctl", snapctl),
        ],
    )
}

pub(super) const SNAPSHOT_CRDS: &str =
    include_str!("../../../fixtures/upstream/csi-snapshot-crds.yaml");

/// The images the CNI manifest fixture names, as written (one pinned by digest, one on quay.io).
pub const NETWORK_IMAGES: [&str; 3] = [
    "docker.io/calico/cni:v3.29.1",
    "calico/node:v3.29.1@sha256:0d1f7a5b7ec9e3c1fd9d8b2b6ce8e0fcb4f64c0b5e1d3d0a6f2e86d2b3c1a9e7",
    "quay.io/tigera/kube-controllers:v3.29.1",
];

pub(super) const NETWORK_YAML: &str = include_str!("../../../fixtures/upstream/network.yaml");

/// The images the dashboard manifest fixture names, as written.
pub const DASHBOARD_IMAGES: [&str; 2] = [
    "kubernetesui/dashboard:v2.7.0",
    "kubernetesui/metrics-scraper:v1.0.8",
];

/// Headlamp's in-cluster manifest, trimmed: its image on ghcr.io, pulled `Always` upstream.
pub(super) const HEADLAMP_YAML: &str = include_str!("../../../fixtures/upstream/headlamp.yaml");

/// Headlamp's release manifest, in the shape a `v0.*` tag publishes it.
pub(super) const HEADLAMP_RELEASE_YAML: &str =
    include_str!("../../../fixtures/upstream/kubernetes-headlamp.yaml");

pub(super) const DASHBOARD_YAML: &str = include_str!("../../../fixtures/upstream/dashboard.yaml");

pub(super) const KUBELET_SERVICE: &str = include_str!("../../../fixtures/upstream/kubelet.service");

pub(super) const KUBEADM_CONF: &str = include_str!("../../../fixtures/upstream/10-kubeadm.conf");
