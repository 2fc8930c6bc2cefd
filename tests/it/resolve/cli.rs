//! `cks-iso resolve` against the local world — real `git http-backend` for the autoscaler tags and
//! the upstream stand-in for everything else — reached only through `--mirror` rules or the
//! configuration file, with no kubeadm anywhere on `PATH`.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::text;
use cks_iso_testworld::git::{GitServer, Mode, Repo, Tag};
use cks_iso_testworld::upstream::{CSI_IMAGES, KubeRelease, Snapshot, UpstreamServer};

const CONSTANTS_1_33_1: &str = "raw.githubusercontent.com/kubernetes/kubernetes/v1.33.1/cmd/kubeadm/app/constants/constants.go";

struct World {
    _repo: Repo,
    git: GitServer,
    upstream: UpstreamServer,
    git_url: String,
    /// An empty directory used as `PATH`: nothing (no kubeadm, no git) can be run from it.
    empty_path: tempfile::TempDir,
}

fn world(snapshot: &Snapshot) -> World {
    use Tag::{Annotated, Light};
    let repo = Repo::with_tags(
        "kubernetes/autoscaler.git",
        &[
            Light("cluster-autoscaler-1.32.2"),
            Annotated("cluster-autoscaler-1.33.0"),
            Annotated("cluster-autoscaler-1.33.1"),
            Light("cluster-autoscaler-1.33.2-rc.1"),
            Light("cluster-autoscaler-chart-9.50.0"),
            Light("cluster-autoscaler-1.37.0"),
        ],
    );
    let git = GitServer::start(repo.project_root(), Mode::Backend);
    let git_url = git.url(&repo);
    World {
        _repo: repo,
        git,
        upstream: UpstreamServer::start(snapshot),
        git_url,
        empty_path: tempfile::tempdir().unwrap(),
    }
}

impl World {
    /// `--mirror` arguments that send every upstream to the local world.
    fn mirror_args(&self) -> Vec<String> {
        self.mirror_args_with_git(&self.git_url)
    }

    /// [`World::mirror_args`] with the autoscaler's repository at `git` instead (a fault proxy in
    /// front of the world's git server, or an address nothing listens on).
    fn mirror_args_with_git(&self, git: &str) -> Vec<String> {
        let mut args = Vec::new();
        for rule in self.upstream.mirror_rules() {
            args.extend(["--mirror".to_owned(), rule]);
        }
        args.extend([
            "--mirror".to_owned(),
            format!("https://github.com/kubernetes/autoscaler={git}"),
        ]);
        args
    }

    fn cmd(&self) -> Command {
        let mut cmd = crate::support::cks_iso();
        cmd.env("PATH", self.empty_path.path())
            .env_remove("AUTOSCALER_VERSION")
            .env_remove("CCM_VERSION")
            .env_remove("CKS_ISO_CONFIG")
            .args(["--no-progress", "--color", "never"]);
        cmd
    }

    fn resolve(&self, extra: &[&str]) -> Output {
        self.cmd()
            .args(["resolve", "--retries", "2"])
            .args(self.mirror_args())
            .args(extra)
            .output()
            .expect("run cks-iso")
    }
}

fn ok(out: &Output) -> (String, String) {
    let (stdout, stderr) = text(out);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// What kubeadm v1.33.1 prints (`upstream.md` §2), in its order.
const KUBEADM_1_33_1: [&str; 7] = [
    "registry.k8s.io/kube-apiserver:v1.33.1",
    "registry.k8s.io/kube-controller-manager:v1.33.1",
    "registry.k8s.io/kube-scheduler:v1.33.1",
    "registry.k8s.io/kube-proxy:v1.33.1",
    "registry.k8s.io/coredns/coredns:v1.12.0",
    "registry.k8s.io/pause:3.10",
    "registry.k8s.io/etcd:3.5.21-0",
];

#[test]
fn resolve_arm64_prints_arm64_urls_and_every_image_without_kubeadm() {
    let w = world(&Snapshot::typical());
    let out = w.resolve(&["--kubernetes", "1.33.1", "--arch", "arm64"]);
    let (stdout, _) = ok(&out);
    for url in [
        "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubeadm",
        "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubelet",
        "https://dl.k8s.io/release/v1.33.1/bin/linux/arm64/kubectl",
        "https://github.com/containernetworking/plugins/releases/download/v1.6.2/cni-plugins-linux-arm64-v1.6.2.tgz",
        "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.33.0/crictl-v1.33.0-linux-arm64.tar.gz",
        "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-1.33.1/cluster-autoscaler/cloudprovider/cloudstack/examples/cluster-autoscaler-standard.yaml",
        "https://raw.githubusercontent.com/apache/cloudstack-kubernetes-provider/v1.2.0/deployment.yaml",
        "https://github.com/cloudstack/cloudstack-csi-driver/releases/download/v3.0.0/manifest.yaml",
    ] {
        assert!(stdout.contains(url), "missing {url} in\n{stdout}");
    }
    assert!(!stdout.contains("/amd64/"), "{stdout}");
    // The seven kubeadm images, in kubeadm's order.
    let positions: Vec<usize> = KUBEADM_1_33_1
        .iter()
        .map(|i| {
            stdout
                .find(i)
                .unwrap_or_else(|| panic!("missing {i} in\n{stdout}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{stdout}");
    assert!(stdout.contains("registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.1"));
    assert!(stdout.contains("docker.io/apache/cloudstack-kubernetes-provider:v1.2.0"));
    for image in CSI_IMAGES {
        assert!(stdout.contains(image), "missing {image} in\n{stdout}");
    }
    assert!(
        stdout.contains("kubeadm constants.go at v1.33.1"),
        "{stdout}"
    );
    // 7 kubeadm + autoscaler + CCM + 8 CSI images (the driver's and livenessprobe's twice, once).
    let images = stdout.split("Images:").nth(1).unwrap();
    assert_eq!(
        images.lines().filter(|l| !l.trim().is_empty()).count(),
        17,
        "{stdout}"
    );
}

#[test]
fn resolve_json_is_machine_readable_and_names_the_mirrored_urls() {
    let w = world(&Snapshot::typical());
    let out = w.resolve(&[
        "--kubernetes",
        "v1.33.1",
        "--arch",
        "aarch64",
        "--etcd",
        "3.5.21",
        "--json",
    ]);
    let (stdout, _) = ok(&out);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(v["arch"], "arm64");
    assert_eq!(v["versions"]["autoscaler"], "1.33.1");
    assert_eq!(v["versions"]["etcd_image"], "3.5.21-0");
    let downloads = v["downloads"].as_array().unwrap();
    let etcd = downloads.iter().find(|d| d["name"] == "etcd").unwrap();
    // The arm64 release, under the one name etcd nodes read.
    assert_eq!(etcd["dest"], "etcd/etcd-linux-amd64.tar.gz");
    assert_eq!(
        etcd["url"],
        "https://github.com/etcd-io/etcd/releases/download/v3.5.21/etcd-v3.5.21-linux-arm64.tar.gz"
    );
    assert_eq!(
        etcd["checksum_url"],
        "https://github.com/etcd-io/etcd/releases/download/v3.5.21/SHA256SUMS"
    );
    assert!(
        etcd["fetch_url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/github.com/", w.upstream.url()))
    );
    let images: Vec<&str> = v["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["image"].as_str().unwrap())
        .collect();
    assert_eq!(&images[..7], KUBEADM_1_33_1);
    // Metadata only: no binary or tarball was downloaded.
    assert!(
        !w.upstream
            .served()
            .iter()
            .any(|s| s.path.contains("/bin/linux/") || s.path.ends_with(".tgz")),
        "{:?}",
        w.upstream.served()
    );
    // The tags came from git over protocol v2.
    assert!(
        w.git
            .seen()
            .iter()
            .any(|s| s.url.ends_with("/git-upload-pack"))
    );
}

#[test]
fn resolve_falls_back_to_the_embedded_table_with_a_warning() {
    let w = world(&Snapshot::typical().remove(CONSTANTS_1_33_1));
    let out = w.resolve(&["--kubernetes", "1.33.1", "--arch", "arm64"]);
    let (stdout, stderr) = ok(&out);
    assert!(stderr.contains("embedded table"), "{stderr}");
    assert!(stderr.contains("404"), "{stderr}");
    for image in KUBEADM_1_33_1 {
        assert!(stdout.contains(image), "{stdout}");
    }
}

#[test]
fn resolve_reads_kubeadm_constants_of_a_release_newer_than_the_tool() {
    let snapshot = Snapshot::typical()
        .kubernetes(KubeRelease::new("1.37.0", "v1.15.0", "3.7.1-0", "3.11"))
        .crictl("1.37.0");
    let w = world(&snapshot);
    let out = w.resolve(&["--kubernetes", "1.37.0", "--arch", "amd64"]);
    let (stdout, _) = ok(&out);
    for image in [
        "registry.k8s.io/coredns/coredns:v1.15.0",
        "registry.k8s.io/pause:3.11",
        "registry.k8s.io/etcd:3.7.1-0",
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.37.0",
    ] {
        assert!(stdout.contains(image), "missing {image} in\n{stdout}");
    }
}

/// kubeadm 1.20 declares `PauseVersion` in `constants_unix.go`: resolve reads it there instead of
/// falling back to the embedded table.
#[test]
fn resolve_reads_kubeadm_1_20_pause_from_constants_unix_go() {
    let snapshot = Snapshot::typical()
        .kubernetes(KubeRelease::known("1.20.15").unwrap())
        .crictl("1.20.0");
    let w = world(&snapshot);
    let out = w.resolve(&["--kubernetes", "1.20.15", "--autoscaler-version", "1.20.0"]);
    let (stdout, stderr) = ok(&out);
    assert!(!stderr.contains("embedded table"), "{stderr}");
    assert!(
        stdout.contains("pause 3.2 (from kubeadm constants.go and constants_unix.go at v1.20.15)"),
        "{stdout}"
    );
    assert!(stdout.contains("k8s.gcr.io/pause:3.2"), "{stdout}");
    assert!(
        w.upstream.served().iter().any(|s| s
            .path
            .ends_with("/v1.20.15/cmd/kubeadm/app/constants/constants_unix.go")),
        "{:?}",
        w.upstream.served()
    );
}

#[test]
fn autoscaler_pin_from_the_environment_warns_on_another_minor() {
    let w = world(&Snapshot::typical());
    let out = w
        .cmd()
        .env("AUTOSCALER_VERSION", "v1.32.2")
        .args(["resolve", "--kubernetes", "1.33.1"])
        .args(w.mirror_args())
        .output()
        .unwrap();
    let (stdout, stderr) = ok(&out);
    assert!(stdout.contains("1.32.2 (pinned)"), "{stdout}");
    assert!(stderr.contains("AUTOSCALER_VERSION=v1.32.2"), "{stderr}");
}

/// With `AUTOSCALER_VERSION` or `--autoscaler-version` no tags are listed: git may be
/// unreachable (here a closed port), as upstream's script only downloads the pinned manifest.
#[test]
fn a_pinned_autoscaler_needs_no_git() {
    let w = world(&Snapshot::typical());
    let mut args: Vec<String> = ["resolve", "--kubernetes", "1.33.1", "--retries", "1"]
        .map(str::to_owned)
        .to_vec();
    args.extend(w.mirror_args_with_git("http://127.0.0.1:9/autoscaler.git"));
    let (stdout, _) = ok(&w
        .cmd()
        .args(&args)
        .args(["--autoscaler-version", "1.33.0"])
        .output()
        .unwrap());
    assert!(stdout.contains("1.33.0 (pinned)"), "{stdout}");
    let (stdout, _) = ok(&w
        .cmd()
        .env("AUTOSCALER_VERSION", "v1.33.0")
        .args(&args)
        .output()
        .unwrap());
    assert!(stdout.contains("1.33.0 (pinned)"), "{stdout}");
    assert!(w.git.seen().is_empty(), "{:?}", w.git.seen());
    // Without a pin the same command needs the listing, and git is not there. A variable set
    // but empty is no pin (nor an empty CCM tag).
    let out = w
        .cmd()
        .env("AUTOSCALER_VERSION", "")
        .env("CCM_VERSION", "")
        .args(&args)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("127.0.0.1:9"), "{stderr}");
}

fn write_config(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("cks-iso.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The YAML `mirrors:` mapping for the world, with `raw` overriding raw.githubusercontent.com.
fn mirrors_yaml(w: &World, raw: Option<&str>) -> String {
    let mut yaml = String::from("mirrors:\n");
    for rule in w.upstream.mirror_rules() {
        let (from, to) = rule.split_once('=').unwrap();
        let to = match (from.contains("raw.githubusercontent.com"), raw) {
            (true, Some(raw)) => raw.to_owned(),
            _ => to.to_owned(),
        };
        yaml.push_str(&format!("  {from}: {to}\n"));
    }
    yaml.push_str(&format!(
        "  https://github.com/kubernetes/autoscaler: {}\n",
        w.git_url
    ));
    yaml
}

#[test]
fn configuration_file_alone_reaches_the_mirrors_and_flags_override_it() {
    let w = world(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    // raw.githubusercontent.com points at a closed port in the file.
    let dead = "http://127.0.0.1:9/raw.githubusercontent.com";
    let config = write_config(
        dir.path(),
        &format!(
            "{}retries: 1\nconnect-timeout: 2\n",
            mirrors_yaml(&w, Some(dead))
        ),
    );
    let run = |extra: &[String], env_config: bool| {
        let mut cmd = w.cmd();
        cmd.args(["resolve", "--kubernetes", "1.33.1", "--arch", "arm64"]);
        match env_config {
            true => cmd.env("CKS_ISO_CONFIG", &config),
            false => cmd.arg("--config").arg(&config),
        };
        cmd.args(extra).output().unwrap()
    };
    // The file's broken rule is used: the CSI manifest (github.com) resolves, constants do not.
    let out = run(&[], false);
    let (_, stderr) = text(&out);
    assert!(stderr.contains("embedded table"), "{stderr}");
    // A flag for the same prefix overrides the file's rule; the file's other rules stay.
    let fix = vec![
        "--mirror".to_owned(),
        format!(
            "https://raw.githubusercontent.com={}/raw.githubusercontent.com",
            w.upstream.url()
        ),
    ];
    let out = run(&fix, true);
    let (stdout, stderr) = ok(&out);
    assert!(!stderr.contains("embedded table"), "{stderr}");
    assert!(
        stdout.contains("kubeadm constants.go at v1.33.1"),
        "{stdout}"
    );
}

#[test]
fn configuration_file_with_an_unknown_key_is_a_usage_error_naming_it() {
    let w = world(&Snapshot::typical());
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "mirrors: {}\nretry: 3\n");
    let out = w
        .cmd()
        .args(["resolve", "--kubernetes", "1.33.1", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`retry`"), "{stderr}");
    assert!(stderr.contains("cks-iso.yaml"), "{stderr}");
}

#[test]
fn wrong_arguments_are_usage_errors_before_any_network_access() {
    for (args, says) in [
        (["--kubernetes", "1.33.1", "--arch", "s390x"], "s390x"),
        (["--kubernetes", "1.19.4", "--arch", "amd64"], "too old"),
        (["--kubernetes", "latest", "--arch", "amd64"], "latest"),
    ] {
        // The mirrors point at a closed port: reaching the network would be a different error.
        let out = crate::support::cks_iso()
            .args([
                "resolve",
                "--mirror",
                "https://github.com=http://127.0.0.1:9/gh",
            ])
            .args(args)
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(stderr.contains("hint:"), "{args:?}: {stderr}");
    }
}

#[test]
fn tag_listing_is_retried_through_transient_git_server_errors() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    let w = world(&Snapshot::typical());
    let base = w
        .git_url
        .trim_end_matches("/kubernetes/autoscaler.git")
        .to_owned();
    let proxy = FaultProxy::start(&base);
    proxy.add(
        Rule::path_contains("/info/refs")
            .times(1)
            .fault(Fault::Status(503)),
    );
    proxy.add(
        Rule::path_contains("/git-upload-pack")
            .times(1)
            .fault(Fault::Status(502)),
    );
    let args = w.mirror_args_with_git(&format!("{}/kubernetes/autoscaler.git", proxy.url()));
    let out = w
        .cmd()
        .args(["resolve", "--kubernetes", "1.33.1", "--retries", "4"])
        .args(&args)
        .output()
        .unwrap();
    let (stdout, _) = ok(&out);
    assert!(stdout.contains("1.33.1 (newest of 1.33)"), "{stdout}");
    let faults = proxy.log().iter().filter(|r| r.fault.is_some()).count();
    assert_eq!(faults, 2, "{:?}", proxy.log());
    assert!(
        proxy
            .log()
            .iter()
            .any(|r| r.method == "POST" && r.fault.is_none())
    );
}

/// A git server that keeps failing ends the listing after the retry budget, and the error says
/// how many times it was asked, as every download's error does.
#[test]
fn a_tag_listing_that_keeps_failing_says_after_how_many_attempts() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    let w = world(&Snapshot::typical());
    let base = w
        .git_url
        .trim_end_matches("/kubernetes/autoscaler.git")
        .to_owned();
    let proxy = FaultProxy::start(&base);
    proxy.add(Rule::path_contains("/info/refs").fault(Fault::Status(503)));
    let args = w.mirror_args_with_git(&format!("{}/kubernetes/autoscaler.git", proxy.url()));
    let out = w
        .cmd()
        .args(["resolve", "--kubernetes", "1.33.1", "--retries", "3"])
        .args(&args)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("answered HTTP 503 Service Unavailable (after 3 attempts)"),
        "{stderr}"
    );
    assert_eq!(proxy.log().len(), 3, "{:?}", proxy.log());
}

/// Every 1.35 release keys kubeadm's etcd map by skew expressions (kubernetes PR #134866), and the
/// embedded table stops at 1.35.7: 1.35.9 resolves from its constants file alone.
#[test]
fn resolve_reads_a_skew_keyed_etcd_map_of_kubeadm_1_35() {
    let snapshot = Snapshot::typical()
        .kubernetes(KubeRelease::new("1.35.9", "v1.13.1", "3.6.10-0", "3.10.1"))
        .crictl("1.35.0");
    let served = String::from_utf8(
        snapshot.files()["raw.githubusercontent.com/kubernetes/kubernetes/v1.35.9/cmd/kubeadm/app/constants/constants.go"]
            .body
            .clone(),
    )
    .unwrap();
    let w = world(&snapshot);
    assert!(
        served.contains("uint8(getSkewedKubernetesVersion(0).Minor()): \"3.6.10-0\""),
        "the world serves 1.35's form:\n{served}"
    );
    // The world's git has no 1.35 autoscaler tag.
    let out = w.resolve(&[
        "--kubernetes",
        "1.35.9",
        "--arch",
        "arm64",
        "--autoscaler-version",
        "1.33.1",
    ]);
    let (stdout, stderr) = ok(&out);
    assert!(!stderr.contains("embedded table"), "{stderr}");
    for image in [
        "registry.k8s.io/coredns/coredns:v1.13.1",
        "registry.k8s.io/pause:3.10.1",
        "registry.k8s.io/etcd:3.6.10-0",
    ] {
        assert!(stdout.contains(image), "missing {image} in\n{stdout}");
    }
}

/// A third form of the map is reported, quoted, with the file's URL, before the embedded table is
/// used; it is never guessed at.
#[test]
fn an_unknown_constants_form_is_named_with_its_url_before_the_fallback() {
    let odd = "package constants\n\nconst (\n\tCoreDNSVersion = \"v1.12.0\"\n\tPauseVersion = \"3.10\"\n)\n\n\
               var SupportedEtcdVersion = map[uint8]string{\n\
               \tuint8(currentMinor() - 1): \"3.5.21-0\",\n}\n";
    let w = world(&Snapshot::typical().replace(CONSTANTS_1_33_1, odd, "text/plain"));
    let out = w.resolve(&["--kubernetes", "1.33.1", "--arch", "amd64"]);
    let (stdout, stderr) = ok(&out);
    assert!(
        stderr.contains("SupportedEtcdVersion key `uint8(currentMinor() - 1)` is not understood"),
        "{stderr}"
    );
    assert!(
        stderr.contains("/v1.33.1/cmd/kubeadm/app/constants/constants.go"),
        "{stderr}"
    );
    assert!(stderr.contains("embedded table"), "{stderr}");
    for image in KUBEADM_1_33_1 {
        assert!(stdout.contains(image), "{stdout}");
    }
}

/// A pin given with the flag is named as the flag, not as the variable that was not used.
#[test]
fn autoscaler_pin_from_the_flag_is_named_as_the_flag() {
    let w = world(&Snapshot::typical());
    let out = w.resolve(&["--kubernetes", "1.33.1", "--autoscaler-version", "1.32.2"]);
    let (stdout, stderr) = ok(&out);
    assert!(stdout.contains("1.32.2 (pinned)"), "{stdout}");
    assert!(
        stderr.contains("--autoscaler-version 1.32.2 is a 1.32 autoscaler"),
        "{stderr}"
    );
    assert!(!stderr.contains("AUTOSCALER_VERSION"), "{stderr}");
}

/// A new minor without a cluster-autoscaler release yet (1.37.0 came out before any 1.37
/// autoscaler): the error names the newest release that exists and the exact flag to pass.
#[test]
fn a_minor_without_an_autoscaler_names_the_newest_release_and_the_flag() {
    let snapshot = Snapshot::typical()
        .kubernetes(KubeRelease::new("1.38.0", "v1.14.2", "3.6.11-0", "3.10.2"))
        .crictl("1.38.0");
    let w = world(&snapshot);
    let out = w.resolve(&["--kubernetes", "1.38.0"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The world's newest cluster-autoscaler-X.Y.Z tag (its chart and -rc tags do not count).
    assert!(
        stderr.contains(
            "no cluster-autoscaler release for Kubernetes 1.38 upstream; the newest release is 1.37.0"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "hint: to build with the newest autoscaler, pass --autoscaler-version 1.37.0 (or set \
             AUTOSCALER_VERSION=1.37.0)"
        ),
        "{stderr}"
    );
}
