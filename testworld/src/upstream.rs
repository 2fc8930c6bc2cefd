//! The in-process stand-in for github.com release downloads, dl.k8s.io and
//! raw.githubusercontent.com (`test-world.md`): a generated "upstream snapshot" served over HTTP.
//!
//! Nothing here is downloaded. A [`Snapshot`] generates small but real-format content
//! deterministically from a seed — ELF64 executables with the right `e_machine` for x86-64 and
//! aarch64, gzip tarballs shaped like the CNI, crictl and etcd releases, the manifests cks-iso
//! bundles written in upstream's shapes (`upstream.md` §3–4, including the CSI joined-separator
//! defect), kubeadm's `constants.go` per release — plus the checksum files upstream publishes
//! beside them: bare hex `<url>.sha256` for Kubernetes binaries, `hex  name` for CNI and crictl,
//! `SHA256SUMS` for etcd, and the version labels (`release/stable-1.33.txt`…, [`crate::labels`]).
//! Which versions exist is chosen with the builder, so a test can make a
//! release missing, old (the CNI legacy name) or newer than anything cks-iso knows.
//!
//! [`UpstreamServer`] serves a snapshot under host-named prefixes:
//! `http://127.0.0.1:P/dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm`. As on the real hosts,
//! release downloads (`github.com/<o>/<r>/releases/download/…` and `dl.k8s.io/release/…`) answer
//! `302` to a second "CDN" server on another port, which serves the bytes with `Range` support;
//! everything else is served directly. [`UpstreamServer::mirror_rules`] gives the `FROM=TO` pairs a
//! user would pass as `--mirror`. Unknown paths answer 404.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::server::{HttpServer, Incoming, Outgoing};

/// Architectures as Kubernetes names them.
pub const ARCHES: [&str; 2] = ["amd64", "arm64"];

/// The CNI plugin binaries put in each CNI tarball.
const CNI_PLUGINS: [&str; 5] = ["bridge", "host-local", "loopback", "portmap", "bandwidth"];

/// The URL hosts the stand-in answers for, as path prefixes.
pub const HOSTS: [&str; 3] = ["github.com", "dl.k8s.io", "raw.githubusercontent.com"];

/// A Kubernetes release and the extras its kubeadm names (written into its `constants.go`).
#[derive(Debug, Clone)]
pub struct KubeRelease {
    /// `1.33.1` (no `v`).
    pub version: String,
    /// `CoreDNSVersion`, e.g. `v1.12.0`.
    pub coredns: String,
    /// The `SupportedEtcdVersion` value for this minor, e.g. `3.5.21-0`.
    pub etcd: String,
    /// `PauseVersion`, e.g. `3.10`.
    pub pause: String,
}

impl KubeRelease {
    /// A release with the given extras.
    pub fn new(version: &str, coredns: &str, etcd: &str, pause: &str) -> Self {
        Self {
            version: version.trim_start_matches('v').to_owned(),
            coredns: coredns.into(),
            etcd: etcd.into(),
            pause: pause.into(),
        }
    }

    /// A release whose extras `upstream.md` §2 records, or `None`.
    pub fn known(version: &str) -> Option<Self> {
        let v = version.trim_start_matches('v');
        let (minor, patch) = minor_patch(v)?;
        // (minor, first, last, coredns, etcd, pause): a few rows of upstream.md §2's table.
        const ROWS: &[(u64, u64, u64, &str, &str, &str)] = &[
            (20, 0, 99, "1.7.0", "3.4.13-0", "3.2"),
            (21, 0, 99, "v1.8.0", "3.4.13-0", "3.4.1"),
            (27, 0, 6, "v1.10.1", "3.5.7-0", "3.9"),
            (28, 8, 13, "v1.10.1", "3.5.12-0", "3.9"),
            (29, 3, 8, "v1.11.1", "3.5.12-0", "3.9"),
            (30, 5, 14, "v1.11.3", "3.5.15-0", "3.9"),
            (31, 1, 13, "v1.11.3", "3.5.15-0", "3.10"),
            (32, 0, 9, "v1.11.3", "3.5.16-0", "3.10"),
            (33, 0, 5, "v1.12.0", "3.5.21-0", "3.10"),
            (33, 6, 13, "v1.12.0", "3.5.24-0", "3.10"),
            (34, 2, 10, "v1.12.1", "3.6.5-0", "3.10.1"),
            (35, 0, 7, "v1.13.1", "3.6.6-0", "3.10.1"),
            (36, 0, 3, "v1.14.2", "3.6.8-0", "3.10.2"),
        ];
        ROWS.iter()
            .find(|r| r.0 == minor && (r.1..=r.2).contains(&patch))
            .map(|r| Self::new(v, r.3, r.4, r.5))
    }

    fn minor(&self) -> u64 {
        minor_patch(&self.version).map_or(0, |(m, _)| m)
    }

    /// Whether kubeadm of this release declares `PauseVersion` in `constants_unix.go` rather than
    /// `constants.go`, as 1.20 does.
    pub fn pause_in_constants_unix(&self) -> bool {
        self.minor() <= 20
    }
}

fn minor_patch(v: &str) -> Option<(u64, u64)> {
    let mut parts = v.split(['.', '-', '+']);
    let _major = parts.next()?;
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// One served file.
#[derive(Debug, Clone)]
pub struct File {
    /// The body.
    pub body: Vec<u8>,
    /// Its `Content-Type`.
    pub content_type: &'static str,
}

/// Which upstream releases exist, and the seed their bytes grow from.
#[derive(Debug, Clone)]
pub struct Snapshot {
    seed: u64,
    kubernetes: Vec<KubeRelease>,
    cni: Vec<String>,
    crictl: Vec<String>,
    etcd: Vec<String>,
    autoscaler: Vec<String>,
    ccm: Vec<String>,
    csi: Vec<String>,
    overrides: BTreeMap<String, File>,
    removed: Vec<String>,
}

impl Snapshot {
    /// An empty snapshot (only the always-present side files) growing from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            kubernetes: Vec::new(),
            cni: Vec::new(),
            crictl: Vec::new(),
            etcd: Vec::new(),
            autoscaler: Vec::new(),
            ccm: Vec::new(),
            csi: Vec::new(),
            overrides: BTreeMap::new(),
            removed: Vec::new(),
        }
    }

    /// The world the demo and most tests use: Kubernetes 1.33.1 and 1.32.4 with everything a
    /// build needs (CNI 1.6.2 and the legacy-named 0.7.5, crictl 1.33.0, etcd 3.5.21, autoscaler
    /// 1.33.1/1.32.2, CCM v1.2.0, CSI v3.0.0).
    pub fn typical() -> Self {
        Self::new(1)
            .kubernetes(KubeRelease::known("1.33.1").unwrap())
            .kubernetes(KubeRelease::known("1.32.4").unwrap())
            .cni("1.6.2")
            .cni("0.7.5")
            .crictl("1.33.0")
            .etcd("3.5.21")
            .autoscaler("1.33.1")
            .autoscaler("1.32.2")
            .ccm("v1.2.0")
            .csi("v3.0.0")
    }

    /// Adds a Kubernetes release: binaries for both arches, `.sha256` files, `constants.go`.
    pub fn kubernetes(mut self, release: KubeRelease) -> Self {
        self.kubernetes.push(release);
        self
    }

    /// Adds a CNI plugins release (`1.6.2`); before 0.8.0 only under the legacy file name.
    pub fn cni(mut self, version: &str) -> Self {
        self.cni.push(version.trim_start_matches('v').into());
        self
    }

    /// Adds a cri-tools release (`1.33.0`).
    pub fn crictl(mut self, version: &str) -> Self {
        self.crictl.push(version.trim_start_matches('v').into());
        self
    }

    /// Adds an etcd release (`3.5.21`).
    pub fn etcd(mut self, version: &str) -> Self {
        self.etcd.push(version.trim_start_matches('v').into());
        self
    }

    /// Adds the CloudStack autoscaler example at tag `cluster-autoscaler-<version>`.
    pub fn autoscaler(mut self, version: &str) -> Self {
        self.autoscaler.push(version.trim_start_matches('v').into());
        self
    }

    /// Adds the CCM `deployment.yaml` at tag `v…`.
    pub fn ccm(mut self, tag: &str) -> Self {
        self.ccm.push(format!("v{}", tag.trim_start_matches('v')));
        self
    }

    /// Adds the CSI driver release assets (`manifest.yaml`, `snapshot-crds.yaml`) at tag `v…`.
    pub fn csi(mut self, tag: &str) -> Self {
        self.csi.push(format!("v{}", tag.trim_start_matches('v')));
        self
    }

    /// Serves `body` at `path` (host-prefixed, e.g. `dl.k8s.io/release/…`) instead of the
    /// generated file: how a test publishes a wrong checksum, a wrong-arch binary or an HTML page.
    pub fn replace(
        mut self,
        path: &str,
        body: impl Into<Vec<u8>>,
        content_type: &'static str,
    ) -> Self {
        self.overrides.insert(
            path.trim_start_matches('/').to_owned(),
            File {
                body: body.into(),
                content_type,
            },
        );
        self
    }

    /// Makes `path` answer 404.
    pub fn remove(mut self, path: &str) -> Self {
        self.removed.push(path.trim_start_matches('/').to_owned());
        self
    }

    /// Every file, by host-prefixed path.
    pub fn files(&self) -> BTreeMap<String, File> {
        let mut out = BTreeMap::new();
        let mut put = |path: String, body: Vec<u8>, content_type: &'static str| {
            out.insert(path, File { body, content_type });
        };
        for k in &self.kubernetes {
            let v = &k.version;
            for arch in ARCHES {
                for bin in ["kubeadm", "kubelet", "kubectl"] {
                    let path = format!("dl.k8s.io/release/v{v}/bin/linux/{arch}/{bin}");
                    let body = elf(arch, self.seed, &path, 96 * 1024);
                    put(
                        format!("{path}.sha256"),
                        sha256_hex(&body).into_bytes(),
                        TEXT,
                    );
                    put(path, body, BINARY);
                }
            }
            put(
                format!(
                    "raw.githubusercontent.com/kubernetes/kubernetes/v{v}/cmd/kubeadm/app/constants/constants.go"
                ),
                constants_go(k).into_bytes(),
                TEXT,
            );
            if k.pause_in_constants_unix() {
                put(
                    format!(
                        "raw.githubusercontent.com/kubernetes/kubernetes/v{v}/cmd/kubeadm/app/constants/constants_unix.go"
                    ),
                    constants_unix_go(k).into_bytes(),
                    TEXT,
                );
            }
        }
        for v in &self.cni {
            for arch in ARCHES {
                let name = if legacy_cni(v) {
                    format!("cni-plugins-{arch}-v{v}.tgz")
                } else {
                    format!("cni-plugins-linux-{arch}-v{v}.tgz")
                };
                let path =
                    format!("github.com/containernetworking/plugins/releases/download/v{v}/{name}");
                let entries: Vec<(String, Vec<u8>, u32)> = CNI_PLUGINS
                    .iter()
                    .map(|p| {
                        (
                            format!("./{p}"),
                            elf(arch, self.seed, &format!("{path}/{p}"), 4096),
                            0o755,
                        )
                    })
                    .collect();
                let body = tgz(&entries);
                put(
                    format!("{path}.sha256"),
                    format!("{}  {name}\n", sha256_hex(&body)).into_bytes(),
                    TEXT,
                );
                put(path, body, BINARY);
            }
        }
        for v in &self.crictl {
            for arch in ARCHES {
                let name = format!("crictl-v{v}-linux-{arch}.tar.gz");
                let path =
                    format!("github.com/kubernetes-sigs/cri-tools/releases/download/v{v}/{name}");
                let body = tgz(&[(
                    "crictl".into(),
                    elf(arch, self.seed, &path, 16 * 1024),
                    0o755,
                )]);
                put(
                    format!("{path}.sha256"),
                    format!("{}  {name}\n", sha256_hex(&body)).into_bytes(),
                    TEXT,
                );
                put(path, body, BINARY);
            }
        }
        let versions: Vec<&str> = self.kubernetes.iter().map(|k| k.version.as_str()).collect();
        for (path, body) in crate::labels::release_labels(&versions) {
            put(path, body.into_bytes(), TEXT);
        }
        for v in &self.etcd {
            let dir = format!("github.com/etcd-io/etcd/releases/download/v{v}");
            let mut sums = String::new();
            for arch in ARCHES {
                let top = format!("etcd-v{v}-linux-{arch}");
                let name = format!("{top}.tar.gz");
                let path = format!("{dir}/{name}");
                let mut entries: Vec<(String, Vec<u8>, u32)> = ["etcd", "etcdctl", "etcdutl"]
                    .iter()
                    .map(|b| {
                        (
                            format!("{top}/{b}"),
                            elf(arch, self.seed, &format!("{path}/{b}"), 8192),
                            0o755,
                        )
                    })
                    .collect();
                entries.push((format!("{top}/README.md"), b"# etcd\n".to_vec(), 0o644));
                let body = tgz(&entries);
                sums.push_str(&format!("{}  {name}\n", sha256_hex(&body)));
                put(path, body, BINARY);
            }
            // Upstream lists other assets too; the tool must pick its own line.
            sums.push_str(&format!(
                "{}  etcd-v{v}-darwin-amd64.zip\n",
                sha256_hex(b"darwin")
            ));
            put(format!("{dir}/SHA256SUMS"), sums.into_bytes(), TEXT);
        }
        for v in &self.autoscaler {
            put(
                format!(
                    "raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-{v}/cluster-autoscaler/cloudprovider/cloudstack/examples/cluster-autoscaler-standard.yaml"
                ),
                autoscaler_example(v).into_bytes(),
                TEXT,
            );
        }
        for tag in &self.ccm {
            put(
                format!(
                    "raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/{tag}/deployment.yaml"
                ),
                ccm_deployment(tag).into_bytes(),
                TEXT,
            );
        }
        for tag in &self.csi {
            let dir =
                format!("github.com/cloudstack/cloudstack-csi-driver/releases/download/{tag}");
            put(
                format!("{dir}/manifest.yaml"),
                csi_manifest(tag).into_bytes(),
                TEXT,
            );
            put(
                format!("{dir}/snapshot-crds.yaml"),
                SNAPSHOT_CRDS.as_bytes().to_vec(),
                TEXT,
            );
        }
        put(
            format!("raw.githubusercontent.com/{NETWORK_PATH}"),
            NETWORK_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            format!("raw.githubusercontent.com/{DASHBOARD_PATH}"),
            DASHBOARD_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            format!("raw.githubusercontent.com/{HEADLAMP_PATH}"),
            HEADLAMP_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            format!("raw.githubusercontent.com/{HEADLAMP_RELEASE_PATH}"),
            HEADLAMP_RELEASE_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            format!("raw.githubusercontent.com/{UNIT_DIR}/kubelet/kubelet.service"),
            KUBELET_SERVICE.as_bytes().to_vec(),
            TEXT,
        );
        put(
            format!("raw.githubusercontent.com/{UNIT_DIR}/kubeadm/10-kubeadm.conf"),
            KUBEADM_CONF.as_bytes().to_vec(),
            TEXT,
        );
        for (path, file) in &self.overrides {
            out.insert(path.clone(), file.clone());
        }
        for path in &self.removed {
            out.remove(path);
        }
        out
    }
}

/// Path (after the host) of the CNI manifest fixture.
pub const NETWORK_PATH: &str = "projectcalico/calico/v3.29.1/manifests/calico.yaml";
/// Path (after the host) of the dashboard manifest fixture.
pub const DASHBOARD_PATH: &str = "kubernetes/dashboard/v2.7.0/aio/deploy/recommended.yaml";
/// Path (after the host) of the Headlamp manifest fixture (CloudStack 4.23+ prefers it to the
/// dashboard).
pub const HEADLAMP_PATH: &str = "kubernetes-sigs/headlamp/v0.30.1/kubernetes-headlamp.yaml";
/// The Headlamp release whose manifest is served as its tag publishes it (CloudStack 4.23's
/// script takes this version as its sixth argument).
pub const HEADLAMP_VERSION: &str = "0.40.1";
/// Path (after the host) of that release's manifest: `ghcr.io/headlamp-k8s/headlamp:latest`, no
/// `imagePullPolicy`.
pub const HEADLAMP_RELEASE_PATH: &str = "kubernetes-sigs/headlamp/v0.40.1/kubernetes-headlamp.yaml";
/// Directory (after the host) of the kubelet unit and kubeadm drop-in fixtures.
pub const UNIT_DIR: &str = "kubernetes/release/v0.16.2/cmd/krel/templates/latest";

const TEXT: &str = "text/plain; charset=utf-8";
const BINARY: &str = "application/octet-stream";

/// Before 0.8.0 the CNI plugins were published as `cni-plugins-<arch>-v<V>.tgz`.
fn legacy_cni(v: &str) -> bool {
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
struct Rng(u64);

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
fn constants_unix_go(k: &KubeRelease) -> String {
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

fn constants_go(k: &KubeRelease) -> String {
    let minor = k.minor();
    let mut map = String::new();
    for m in minor.saturating_sub(2)..=minor {
        map.push_str(&format!("\t\t{m}: \"{}\",\n", k.etcd));
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

const AUTOSCALER_EXAMPLE: &str = include_str!("../../fixtures/upstream/autoscaler-example.yaml.in");

fn autoscaler_example(version: &str) -> String {
    let image = autoscaler_example_image(version);
    let policy = match minor_patch(version) {
        Some((minor, _)) if minor <= 22 => "Always",
        _ => "IfNotPresent",
    };
    fill(AUTOSCALER_EXAMPLE, &[("image", image), ("policy", policy)])
}

const CCM_DEPLOYMENT: &str = include_str!("../../fixtures/upstream/ccm-deployment.yaml.in");

fn ccm_deployment(tag: &str) -> String {
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

const CSI_MANIFEST: &str = include_str!("../../fixtures/upstream/csi-manifest.yaml.in");

fn csi_manifest(tag: &str) -> String {
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
    // `rbac.authorization.k8s.io` — upstream's defect (upstream.md §4).
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

const SNAPSHOT_CRDS: &str = include_str!("../../fixtures/upstream/csi-snapshot-crds.yaml");

/// The images the CNI manifest fixture names, as written (one pinned by digest, one on quay.io).
pub const NETWORK_IMAGES: [&str; 3] = [
    "docker.io/calico/cni:v3.29.1",
    "calico/node:v3.29.1@sha256:0d1f7a5b7ec9e3c1fd9d8b2b6ce8e0fcb4f64c0b5e1d3d0a6f2e86d2b3c1a9e7",
    "quay.io/tigera/kube-controllers:v3.29.1",
];

const NETWORK_YAML: &str = include_str!("../../fixtures/upstream/network.yaml");

/// The images the dashboard manifest fixture names, as written.
pub const DASHBOARD_IMAGES: [&str; 2] = [
    "kubernetesui/dashboard:v2.7.0",
    "kubernetesui/metrics-scraper:v1.0.8",
];

/// Headlamp's in-cluster manifest, trimmed: its image on ghcr.io, pulled `Always` upstream.
const HEADLAMP_YAML: &str = include_str!("../../fixtures/upstream/headlamp.yaml");

/// Headlamp's release manifest, in the shape a `v0.*` tag publishes it.
const HEADLAMP_RELEASE_YAML: &str =
    include_str!("../../fixtures/upstream/kubernetes-headlamp.yaml");

const DASHBOARD_YAML: &str = include_str!("../../fixtures/upstream/dashboard.yaml");

const KUBELET_SERVICE: &str = include_str!("../../fixtures/upstream/kubelet.service");

const KUBEADM_CONF: &str = include_str!("../../fixtures/upstream/10-kubeadm.conf");

/// One request the stand-in answered.
#[derive(Debug, Clone)]
pub struct Served {
    /// Which server: `"origin"` or `"cdn"`.
    pub server: &'static str,
    /// `GET`, `HEAD`, …
    pub method: String,
    /// The path requested, query included.
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
    /// The status answered.
    pub status: u16,
}

struct Shared {
    files: Mutex<BTreeMap<String, File>>,
    /// Where `302`s send release downloads (the CDN, or a proxy in front of it).
    cdn_base: Mutex<String>,
    log: Mutex<Vec<Served>>,
}

/// The origin and CDN servers for a snapshot; both stop when dropped.
pub struct UpstreamServer {
    origin: HttpServer,
    cdn: HttpServer,
    shared: Arc<Shared>,
}

impl UpstreamServer {
    /// Serves `snapshot` on two ephemeral 127.0.0.1 ports.
    pub fn start(snapshot: &Snapshot) -> Self {
        let shared = Arc::new(Shared {
            files: Mutex::new(snapshot.files()),
            cdn_base: Mutex::new(String::new()),
            log: Mutex::new(Vec::new()),
        });
        let [origin, cdn] = ["origin", "cdn"].map(|role| {
            let shared = shared.clone();
            HttpServer::start(move |request| handle(&request, role, &shared))
        });
        *shared.cdn_base.lock().unwrap() = format!("http://{}", cdn.host());
        Self {
            origin,
            cdn,
            shared,
        }
    }

    /// The origin's base URL, `http://127.0.0.1:P`; a host's files are under `/<host>/`.
    pub fn url(&self) -> String {
        format!("http://{}", self.origin.host())
    }

    /// The CDN's own base URL.
    pub fn cdn_url(&self) -> String {
        format!("http://{}", self.cdn.host())
    }

    /// Makes release downloads redirect to `base` (e.g. a fault proxy in front of
    /// [`UpstreamServer::cdn_url`]) instead of the CDN.
    pub fn redirect_cdn_to(&self, base: &str) {
        *self.shared.cdn_base.lock().unwrap() = base.trim_end_matches('/').to_owned();
    }

    /// The `FROM=TO` mirror rules that send each upstream host to this stand-in through `base`
    /// (the origin's URL, or a proxy in front of it).
    pub fn mirror_rules_via(base: &str) -> Vec<String> {
        HOSTS
            .iter()
            .map(|h| format!("https://{h}={}/{h}", base.trim_end_matches('/')))
            .collect()
    }

    /// The `FROM=TO` mirror rules that send each upstream host to this stand-in.
    pub fn mirror_rules(&self) -> Vec<String> {
        Self::mirror_rules_via(&self.url())
    }

    /// Serves `body` at `path` (host-prefixed) from now on: how a test spoils a `.sig` mid-run.
    pub fn put(&self, path: &str, body: impl Into<Vec<u8>>, content_type: &'static str) {
        self.shared.files.lock().unwrap().insert(
            path.trim_start_matches('/').to_owned(),
            File {
                body: body.into(),
                content_type,
            },
        );
    }

    /// Makes `path` answer 404 from now on; returns what it served.
    pub fn take(&self, path: &str) -> Option<File> {
        self.shared
            .files
            .lock()
            .unwrap()
            .remove(path.trim_start_matches('/'))
    }

    /// Every request answered so far.
    pub fn served(&self) -> Vec<Served> {
        self.shared.log.lock().unwrap().clone()
    }
}

/// Release downloads that answer `302` to the CDN on the real hosts.
fn redirected(path: &str) -> bool {
    path.starts_with("dl.k8s.io/release/")
        || (path.starts_with("github.com/") && path.contains("/releases/download/"))
}

fn handle(request: &Incoming, role: &'static str, shared: &Shared) -> Outgoing {
    let full = &request.target;
    let range = request.header("Range").map(str::to_owned);
    let path = full.split('?').next().unwrap_or("").trim_start_matches('/');
    // The CDN serves `/<cdn-host>/<origin path>?<signature>`.
    let lookup = match role {
        "cdn" => path.split_once('/').map_or("", |(_, rest)| rest),
        _ => path,
    };
    let file = shared.files.lock().unwrap().get(lookup).cloned();
    let response = match file.as_ref() {
        Some(_) if role == "origin" && redirected(lookup) => {
            let cdn_host = match lookup.starts_with("dl.k8s.io/") {
                true => "cdn.dl.k8s.io",
                false => "objects.githubusercontent.com",
            };
            let location = format!(
                "{}/{cdn_host}/{lookup}?X-Signature=cks-iso-testworld",
                shared.cdn_base.lock().unwrap()
            );
            Outgoing::new(302, Vec::new()).with("Location", &location)
        }
        Some(file) => serve_file(file, range.as_deref()),
        None => Outgoing::new(404, "Not Found").with("Content-Type", "text/plain; charset=utf-8"),
    };
    shared.log.lock().unwrap().push(Served {
        server: role,
        method: request.method.clone(),
        path: full.clone(),
        range,
        status: response.status,
    });
    response
}

fn serve_file(file: &File, range: Option<&str>) -> Outgoing {
    let len = file.body.len();
    let start = range
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|s| s.parse::<usize>().ok());
    let base = |status: u16, body: Vec<u8>| {
        Outgoing::new(status, body)
            .with("Content-Type", file.content_type)
            .with("Accept-Ranges", "bytes")
    };
    match start {
        Some(start) if start < len => base(206, file.body[start..].to_vec())
            .with("Content-Range", &format!("bytes {start}-{}/{len}", len - 1)),
        Some(_) => Outgoing::new(416, Vec::new()).with("Content-Range", &format!("bytes */{len}")),
        None => base(200, file.body.clone()),
    }
}

/// A fixture template with each `{name}` replaced by its value.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut text = template.to_owned();
    for (name, value) in values {
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}

#[cfg(test)]
mod tests {
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
        let body = &files["github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-amd64.tar.gz"].body;
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
}
