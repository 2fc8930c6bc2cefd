//! Test support shared by the integration tests: the binary under test, the real tools that judge
//! its output, and generated input trees.
#![allow(dead_code)] // Each test crate uses a different part of the support.

pub mod cloud;
pub mod containerd;
pub mod hostile;
// The ISO crate's own crafting code, test-only there: one copy for both suites.
#[path = "../../../crates/cks-iso-iso9660/src/craft.rs"]
pub mod iso_craft;
pub mod push;
pub mod registry;
pub mod sync;
pub mod world;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `cks-iso` binary cargo built for this test run, unable to reach the internet.
pub fn cks_iso() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cks-iso"));
    no_internet(&mut cmd);
    // Podman's auth files of whoever runs the tests are never read.
    cmd.env_remove("SOURCE_DATE_EPOCH")
        .env_remove("CKS_ISO_LOG")
        .env_remove("XDG_RUNTIME_DIR")
        .env("XDG_CONFIG_HOME", "/nonexistent/cks-iso-tests")
        .env("NO_COLOR", "1");
    cmd
}

/// A proxy nobody listens on, for every host but loopback: the test world lives on loopback, so a
/// regression that would reach a real upstream (a mirror rule not applied, a URL built past the
/// fetch layer) fails with "connection refused" at this address instead of passing on a machine
/// that happens to have a network. The lowercase spellings, which the HTTP stack also reads, are
/// removed so a developer's own proxy settings cannot override it.
pub const DEAD_PROXY: &str = "http://127.0.0.1:9";

/// Points `cmd`'s HTTP(S) traffic for non-loopback hosts at [`DEAD_PROXY`].
pub fn no_internet(cmd: &mut Command) -> &mut Command {
    for var in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
        cmd.env_remove(var);
    }
    cmd.env("HTTP_PROXY", DEAD_PROXY)
        .env("HTTPS_PROXY", DEAD_PROXY)
        .env("ALL_PROXY", DEAD_PROXY)
        .env("NO_PROXY", "127.0.0.1,localhost,::1")
}

/// Whether the files `a` and `b` hold the same bytes, as `cmp` judges them. `-s`: a difference
/// is an answer here, not a failure, so cmp's "differ: byte N" stays out of the test log.
pub fn same_bytes(a: &Path, b: &Path) -> bool {
    require("cmp");
    Command::new("cmp")
        .arg("-s")
        .arg(a)
        .arg(b)
        .status()
        .expect("run cmp")
        .success()
}

/// The epoch every test build is dated with, so two builds in one world compare byte for byte.
pub const EPOCH: &str = "1700000000";

/// `cks-iso build` in a test world: the world's configuration (its mirrors), a private TMPDIR,
/// the tests' epoch. Callers add the build's arguments.
pub fn build_in(config: &Path, tmp: &Path) -> Command {
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", config)
        .env("TMPDIR", tmp)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .arg("build");
    cmd
}

/// `cks-iso build ARGS…` in `world`, with TMPDIR and the cache under `dir`; waits for it.
pub fn build_in_world(
    world: &cks_iso_testworld::world::World,
    dir: &Path,
    args: &[&str],
) -> Output {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    build_in(world.config_path(), &tmp)
        .args(args)
        .args(["--cache-dir", p(&dir.join("cache"))])
        .output()
        .unwrap()
}

/// `cks-iso verify ISO EXTRA…`: its exit code and stdout then stderr.
pub fn verify_iso(iso: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = cks_iso()
        .arg("verify")
        .arg(iso)
        .args(extra)
        .output()
        .unwrap();
    (out.status.code(), combined(&out))
}

/// Asserts that `out` succeeded, showing its exit and both streams otherwise; hands it back.
pub fn ok(out: Output) -> Output {
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    out
}

/// stdout and stderr of a finished command, as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// stdout then stderr of a finished command, as one text to search.
pub fn combined(out: &Output) -> String {
    let (stdout, stderr) = text(out);
    stdout + &stderr
}

/// Extracts `iso` into `tree` (created) with bsdtar and returns its `signatures/report.json`.
pub fn signature_report(iso: &Path, tree: &Path) -> serde_json::Value {
    std::fs::create_dir_all(tree).unwrap();
    tool("bsdtar", ["-x", "-f", p(iso), "-C", p(tree)]);
    let text = std::fs::read(tree.join("signatures/report.json")).unwrap();
    serde_json::from_slice(&text).unwrap()
}

/// The entry of signature report `report` for the image `reference`.
pub fn image_entry<'a>(report: &'a serde_json::Value, reference: &str) -> &'a serde_json::Value {
    let images = report["images"].as_array().expect("a report lists images");
    images
        .iter()
        .find(|i| i["reference"] == reference)
        .unwrap_or_else(|| panic!("{reference} is not in the report: {report:#}"))
}

/// Runs `cmd`, asserting exit `code` and that every needle is in its output.
pub fn fails(cmd: &mut Command, code: i32, needles: &[&str]) -> String {
    let out = cmd.output().unwrap();
    let all = combined(&out);
    assert_eq!(out.status.code(), Some(code), "{cmd:?}:\n{all}");
    for needle in needles {
        assert!(all.contains(needle), "{needle:?} missing in:\n{all}");
    }
    all
}

/// stderr of a finished command, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `cmd` with stdout a pipe whose reader is already gone (`cmd | head -0`), so its first
/// write of data fails with a broken pipe; stderr is captured.
pub fn into_closed_pipe(mut cmd: Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

/// Asserts a run whose stdout was closed ended quietly: exit 0, no panic, no error report.
pub fn ended_quietly(what: &str, o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{what} into a closed pipe: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("error"),
        "{what}: {err}"
    );
}

/// Fails the test (never skips) when a tool the test needs is missing.
pub fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "`{tool}` is not installed: run `make deps` first");
}

/// Runs `cmd`, panicking with its output when it fails.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (run `make deps`)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `program args…` (checked with [`require`] first), failing the test with its output.
pub fn run_tool(program: &str, args: &[&str]) -> Output {
    require(program);
    run(Command::new(program).args(args))
}

/// Runs a tool by name with arguments and returns its stdout and stderr as text.
pub fn tool<I, S>(name: &str, args: I) -> (String, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    require(name);
    let out = run(Command::new(name).args(args));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the tests run as root (containerd needs it; permission tests drop to `nobody`).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Set (to anything) to skip, knowingly, the parts of tests that need root when not running as
/// root. A test-only variable: cks-iso itself never reads it.
pub const WITHOUT_ROOT: &str = "CKS_ISO_TESTS_WITHOUT_ROOT";

/// Whether `what`, which needs root, can run. As root: yes. Otherwise the test fails, saying how
/// to run it, unless [`WITHOUT_ROOT`] is set; then it prints that it skips `what` and returns
/// `false`. Nothing that needs root passes silently.
pub fn root_or_skip(what: &str) -> bool {
    if is_root() {
        return true;
    }
    let uid = rustix::process::geteuid().as_raw();
    if std::env::var_os(WITHOUT_ROOT).is_some() {
        eprintln!("skipping {what}: it needs root, this is uid {uid}, and {WITHOUT_ROOT} is set");
        return false;
    }
    panic!(
        "{what} needs root (this is uid {uid}): run the tests as root, e.g. `sudo make test`, or \
         set {WITHOUT_ROOT}=1 to skip it knowingly"
    );
}

/// A fake 64-hex digest, as in `cilium:v1.16.6@sha256:<hex>.tar`.
pub const DIGEST: &str = "6e3ef1d2e5cb9f5a1e2b1b0b2b9b3f0f6f5a4c3d2e1f0a9b8c7d6e5f4a3b2c1d";

/// Writes a tree named like a real CKS ISO into `root` (mode 0700, as `mktemp -d` makes it) and
/// returns its relative file paths with their expected ISO modes.
pub fn cks_tree(root: &Path) -> Vec<(String, u32)> {
    let files: Vec<(String, u32, Vec<u8>)> = vec![
        ("k8s/kubeadm".into(), 0o755, elf_like(b"kubeadm", 70_000)),
        ("k8s/kubelet".into(), 0o755, elf_like(b"kubelet", 90_000)),
        ("k8s/kubectl".into(), 0o755, elf_like(b"kubectl", 50_000)),
        ("cni/cni-plugins-amd64.tgz".into(), 0o644, noise(1, 40_000)),
        (
            "cri-tools/crictl-linux-amd64.tar.gz".into(),
            0o644,
            noise(2, 30_000),
        ),
        (
            "docker/kube-apiserver:v1.33.1.tar".into(),
            0o644,
            noise(3, 120_000),
        ),
        ("docker/pause:3.10.tar".into(), 0o644, noise(4, 5_000)),
        (
            format!("docker/cilium:v1.16.6@sha256:{DIGEST}.tar"),
            0o644,
            noise(5, 9_000),
        ),
        ("docker/coredns:v1.12.0.tar".into(), 0o644, Vec::new()),
        (
            "versions.txt".into(),
            0o644,
            b"kubernetes v1.33.1\narch amd64\n".to_vec(),
        ),
        (
            "kubelet.service".into(),
            0o644,
            b"[Service]\nExecStart=/opt/bin/kubelet\n".to_vec(),
        ),
        (
            "10-kubeadm.conf".into(),
            0o644,
            b"[Service]\nExecStart=/opt/bin/kubelet $KUBELET_KUBECONFIG_ARGS\n".to_vec(),
        ),
        (
            "network.yaml".into(),
            0o644,
            b"apiVersion: v1\nkind: ConfigMap\n".to_vec(),
        ),
        (
            "dashboard.yaml".into(),
            0o644,
            b"apiVersion: v1\nkind: Namespace\n".to_vec(),
        ),
        (
            "autoscaler.yaml".into(),
            0o644,
            b"args:\n  - --nodes=<min>:<max>:<cluster-id>\n".to_vec(),
        ),
        (
            "provider.yaml".into(),
            0o644,
            b"image: apache/cloudstack-kubernetes-provider:v1.2.0\n".to_vec(),
        ),
        (
            format!("names/{}", "n".repeat(200)),
            0o644,
            b"200-byte name\n".to_vec(),
        ),
        ("names/a.b.c.d.e.f.tar.gz".into(), 0o644, b"dots\n".to_vec()),
        ("names/MixedCase.Yaml".into(), 0o644, b"case\n".to_vec()),
    ];
    fs::create_dir_all(root).unwrap();
    for (rel, mode, data) in &files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, data).unwrap();
        // Executables as a release tarball has them (0775); data files group-writable as some
        // umasks leave them: the ISO must normalise both.
        let host_mode = if *mode == 0o755 { 0o775 } else { 0o664 };
        fs::set_permissions(&path, fs::Permissions::from_mode(host_mode)).unwrap();
    }
    std::os::unix::fs::symlink("kubeadm", root.join("k8s/kubeadm-link")).unwrap();
    fs::set_permissions(root.join("names"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(root, fs::Permissions::from_mode(0o700)).unwrap();
    files
        .into_iter()
        .map(|(rel, mode, _)| (rel, mode))
        .collect()
}

/// Bytes that start like an ELF file, for names that should look like binaries.
pub fn elf_like(tag: &[u8], len: usize) -> Vec<u8> {
    let mut data = b"\x7fELF\x02\x01\x01".to_vec();
    data.extend_from_slice(tag);
    data.extend(noise(len as u64, len));
    data.truncate(len);
    data
}

/// Deterministic incompressible bytes.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Every entry name in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Builds an ISO of `src` at `out` with a fixed epoch, panicking on failure.
pub fn build_iso(src: &Path, out: &Path) -> Output {
    run(cks_iso()
        .args(["iso", "--source-date-epoch", "1700000000", "-o"])
        .arg(out)
        .arg(src))
}

/// A fresh temporary directory that `nobody` can enter, for tests that drop privileges.
pub fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A path inside `dir`.
pub fn at(dir: &Path, rel: &str) -> PathBuf {
    dir.join(rel)
}

/// A temp path as `&str`, for argument lists (temp paths are UTF-8).
pub fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

/// Runs `cmd` as `nobody` (uid 65534) when the tests run as root, so permission checks apply and
/// nothing can lean on root; as the current user otherwise.
pub fn as_nobody(cmd: Command) -> Command {
    if !is_root() {
        return cmd;
    }
    require("setpriv");
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    wrapped
}

/// The formats' own SBOM validators, from the virtualenv `make deps` fills: cyclonedx-python-lib's
/// strict CycloneDX 1.6 validator (through `scripts/validate-cdx.py`) and `pyspdxtools`. Fails the
/// test, naming `make deps`, when they are missing.
pub fn validate_sboms(cyclonedx: &[&Path], spdx: &[&Path]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = root.join(".venv-sbom/bin");
    let (python, pyspdxtools) = (bin.join("python"), bin.join("pyspdxtools"));
    assert!(
        python.exists() && pyspdxtools.exists(),
        "the SBOM validators are not installed in {}: run `make deps` first",
        bin.display()
    );
    run(Command::new(&python)
        .arg(root.join("scripts/validate-cdx.py"))
        .args(cyclonedx));
    for file in spdx {
        run(Command::new(&pyspdxtools).arg("-i").arg(file));
    }
}
