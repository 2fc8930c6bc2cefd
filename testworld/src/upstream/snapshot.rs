//! What a world's upstream holds: a Kubernetes release's facts ([`KubeRelease`]) and the
//! [`Snapshot`] builder that generates every file (binaries, tarballs, checksums, manifests,
//! labels) for the chosen versions.

use super::*;

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

    /// A release whose extras `docs/reference/upstream.md` §2 records, or `None`.
    pub fn known(version: &str) -> Option<Self> {
        let v = version.trim_start_matches('v');
        let (minor, patch) = minor_patch(v)?;
        // (minor, first, last, coredns, etcd, pause): a few rows of docs/reference/upstream.md §2's
        // table.
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

    pub(super) fn minor(&self) -> u64 {
        minor_patch(&self.version).map_or(0, |(m, _)| m)
    }

    /// Whether kubeadm of this release declares `PauseVersion` in `constants_unix.go` rather than
    /// `constants.go`, as 1.20 does.
    pub fn pause_in_constants_unix(&self) -> bool {
        self.minor() <= 20
    }
}

pub(super) fn minor_patch(v: &str) -> Option<(u64, u64)> {
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
        self.kubernetes_files(&mut out);
        self.cni_files(&mut out);
        self.crictl_files(&mut out);
        let versions: Vec<&str> = self.kubernetes.iter().map(|k| k.version.as_str()).collect();
        for (path, body) in crate::labels::release_labels(&versions) {
            put(&mut out, path, body.into_bytes(), TEXT);
        }
        self.etcd_files(&mut out);
        self.manifest_files(&mut out);
        for (path, file) in &self.overrides {
            out.insert(path.clone(), file.clone());
        }
        for path in &self.removed {
            out.remove(path);
        }
        out
    }

    /// Each release's kubeadm, kubelet and kubectl with their `.sha256`, and kubeadm's constants.
    fn kubernetes_files(&self, out: &mut Files) {
        for k in &self.kubernetes {
            let v = &k.version;
            for arch in ARCHES {
                for bin in ["kubeadm", "kubelet", "kubectl"] {
                    let path = format!("dl.k8s.io/release/v{v}/bin/linux/{arch}/{bin}");
                    let body = elf(arch, self.seed, &path, 96 * 1024);
                    put(
                        out,
                        format!("{path}.sha256"),
                        sha256_hex(&body).into_bytes(),
                        TEXT,
                    );
                    put(out, path, body, BINARY);
                }
            }
            put(
                out,
                format!(
                    "raw.githubusercontent.com/kubernetes/kubernetes/v{v}/cmd/kubeadm/app/constants/constants.go"
                ),
                constants_go(k).into_bytes(),
                TEXT,
            );
            if k.pause_in_constants_unix() {
                put(
                    out,
                    format!(
                        "raw.githubusercontent.com/kubernetes/kubernetes/v{v}/cmd/kubeadm/app/constants/constants_unix.go"
                    ),
                    constants_unix_go(k).into_bytes(),
                    TEXT,
                );
            }
        }
    }

    /// The CNI plugins' tarballs (under the legacy name where that release used it).
    fn cni_files(&self, out: &mut Files) {
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
                    out,
                    format!("{path}.sha256"),
                    format!("{}  {name}\n", sha256_hex(&body)).into_bytes(),
                    TEXT,
                );
                put(out, path, body, BINARY);
            }
        }
    }

    /// crictl's tarballs.
    fn crictl_files(&self, out: &mut Files) {
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
                    out,
                    format!("{path}.sha256"),
                    format!("{}  {name}\n", sha256_hex(&body)).into_bytes(),
                    TEXT,
                );
                put(out, path, body, BINARY);
            }
        }
    }

    /// etcd's tarballs and their `SHA256SUMS`.
    fn etcd_files(&self, out: &mut Files) {
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
                put(out, path, body, BINARY);
            }
            // Upstream lists other assets too; the tool must pick its own line.
            sums.push_str(&format!(
                "{}  etcd-v{v}-darwin-amd64.zip\n",
                sha256_hex(b"darwin")
            ));
            put(out, format!("{dir}/SHA256SUMS"), sums.into_bytes(), TEXT);
        }
    }

    /// The manifests (autoscaler examples, CCM, CSI, network, dashboard, Headlamp) and the
    /// kubelet units.
    fn manifest_files(&self, out: &mut Files) {
        for v in &self.autoscaler {
            put(
                out,
                format!(
                    "raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-{v}/cluster-autoscaler/cloudprovider/cloudstack/examples/cluster-autoscaler-standard.yaml"
                ),
                autoscaler_example(v).into_bytes(),
                TEXT,
            );
        }
        for tag in &self.ccm {
            put(
                out,
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
                out,
                format!("{dir}/manifest.yaml"),
                csi_manifest(tag).into_bytes(),
                TEXT,
            );
            put(
                out,
                format!("{dir}/snapshot-crds.yaml"),
                SNAPSHOT_CRDS.as_bytes().to_vec(),
                TEXT,
            );
        }
        put(
            out,
            format!("raw.githubusercontent.com/{NETWORK_PATH}"),
            NETWORK_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{DASHBOARD_PATH}"),
            DASHBOARD_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{HEADLAMP_PATH}"),
            HEADLAMP_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{HEADLAMP_RELEASE_PATH}"),
            HEADLAMP_RELEASE_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{HEADLAMP_PROMOTED_RELEASE_PATH}"),
            HEADLAMP_RELEASE_YAML.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{UNIT_DIR}/kubelet/kubelet.service"),
            KUBELET_SERVICE.as_bytes().to_vec(),
            TEXT,
        );
        put(
            out,
            format!("raw.githubusercontent.com/{UNIT_DIR}/kubeadm/10-kubeadm.conf"),
            KUBEADM_CONF.as_bytes().to_vec(),
            TEXT,
        );
    }
}

/// Files by host-prefixed path.
type Files = BTreeMap<String, File>;

/// Serves `body` as `content_type` at `path`.
fn put(out: &mut Files, path: String, body: Vec<u8>, content_type: &'static str) {
    out.insert(path, File { body, content_type });
}
