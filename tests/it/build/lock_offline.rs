//! Trustworthy rebuilds: the lock every build writes (inside each ISO and with `--lock-file`),
//! `--locked` builds that are byte-identical whatever the environment, `--offline` builds that
//! open not a single connection, drift that fails naming the item and both hashes, and `verify`
//! holding the embedded lock to the ISO. Against the whole local world, judged with `cmp`-equal
//! bytes and a listener that records every connection on the world's ports.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::*;
use cks_iso_testworld::upstream::sha256_hex;
use cks_iso_testworld::world::{Options, World, default_snapshot};

const ISOS: [&str; 2] = ["setup-v1.33.1-x86_64.iso", "setup-v1.33.1-aarch64.iso"];

/// `cks-iso build` with `config` as the configuration and `tmp` as TMPDIR.
fn build(config: &Path, tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", config)
        .env("TMPDIR", tmp)
        .arg("build")
        .arg("--no-progress")
        .args(args);
    cmd
}

fn assert_same_bytes(a: &Path, b: &Path) {
    assert!(
        crate::support::same_bytes(a, b),
        "{} and {} differ",
        a.display(),
        b.display()
    );
}

fn tmp_in(dir: &Path, name: &str) -> PathBuf {
    let tmp = dir.join(name);
    fs::create_dir_all(&tmp).unwrap();
    tmp
}

fn assert_no_isos(out: &Path) {
    let left: Vec<String> = fs::read_dir(out)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", out.display());
}

/// Every `127.0.0.1:<port>` the configuration names.
fn ports(config: &str) -> Vec<u16> {
    let mut ports: Vec<u16> = config
        .split("127.0.0.1:")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Listens on `ports` (no server behind) and counts every connection made.
fn record_connections(ports: &[u16]) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    for &port in ports {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("cannot listen on the world's port {port}: {e}"));
        let count = count.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
    }
    count
}

#[test]
fn locked_rebuilds_are_byte_identical_online_in_another_environment_and_offline_with_no_connection()
{
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    let world = World::start(Options::default());
    let config = d.join("config.yaml");
    fs::write(&config, world.config_yaml()).unwrap();
    // The configuration names the world's trust root relative to itself; it outlives the world.
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    let tmp = tmp_in(d, "tmp");
    run(build(
        &config,
        &tmp,
        &[
            "--kubernetes",
            "1.33.1",
            "--arch",
            "amd64",
            "--arch",
            "arm64",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
            "--lock-file",
            p(&lock),
        ],
    )
    .env("SOURCE_DATE_EPOCH", EPOCH));

    // The lock beside the ISOs holds both arches; each ISO holds its own.
    let written: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    assert_eq!(written["version"], 1);
    assert_eq!(written["epoch"], 1_700_000_000);
    assert_eq!(
        written["request"]["arches"],
        serde_json::json!(["amd64", "arm64"])
    );
    let commit = written["autoscaler"]["commit"].as_str().unwrap();
    assert_eq!(commit.len(), 40, "the tag's commit is recorded");
    let amd = &written["arches"]["amd64"];
    assert!(amd["images"].as_array().unwrap().len() > 10);
    assert!(
        !String::from_utf8_lossy(&fs::read(&lock).unwrap()).contains(p(d)),
        "no host path in the lock"
    );
    let inside = d.join("inside");
    fs::create_dir_all(&inside).unwrap();
    tool(
        "bsdtar",
        [
            "-x",
            "-f",
            p(&out.join(ISOS[0])),
            "-C",
            p(&inside),
            "cks-iso.lock",
        ],
    );
    let own: serde_json::Value =
        serde_json::from_slice(&fs::read(inside.join("cks-iso.lock")).unwrap()).unwrap();
    assert_eq!(own["arches"].as_object().unwrap().len(), 1);
    assert_eq!(own["arches"]["amd64"], *amd);
    let verify = cks_iso()
        .arg("verify")
        .arg(out.join(ISOS[0]))
        .arg(out.join(ISOS[1]))
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", combined(&verify));

    // A fresh cache, online, in another environment: umask 077, TZ, LANG, TMPDIR, --jobs 1, the
    // arches in the other order.
    let out2 = d.join("out2");
    let mut cmd = Command::new("sh");
    crate::support::no_internet(&mut cmd)
        .arg("-c")
        .arg("umask 077; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_cks-iso"))
        .args([
            "build",
            "--no-progress",
            "--locked",
            p(&lock),
            "--jobs",
            "1",
        ])
        .args(["--arch", "arm64", "--arch", "amd64"])
        .args(["--output", p(&out2), "--cache-dir", p(&d.join("cache2"))])
        .env("CKS_ISO_CONFIG", &config)
        .env("TMPDIR", tmp_in(d, "tmp2"))
        .env("TZ", "Pacific/Kiritimati")
        .env("LANG", "de_DE.UTF-8")
        .env_remove("SOURCE_DATE_EPOCH");
    run(&mut cmd);
    for iso in ISOS {
        assert_same_bytes(&out.join(iso), &out2.join(iso));
    }

    // Every server stopped; only listeners that count connections on the world's ports.
    let world_ports = ports(world.config_yaml());
    assert!(world_ports.len() >= 3, "{world_ports:?}");
    drop(world);
    let connections = record_connections(&world_ports);

    let out3 = d.join("out3");
    run(&mut build(
        &config,
        &tmp_in(d, "tmp3"),
        &[
            "--locked",
            p(&lock),
            "--offline",
            "--output",
            p(&out3),
            "--cache-dir",
            p(&cache),
        ],
    ));
    for iso in ISOS {
        assert_same_bytes(&out.join(iso), &out3.join(iso));
    }
    // The ISO's own lock is enough to rebuild that arch.
    let out4 = d.join("out4");
    run(&mut build(
        &config,
        &tmp_in(d, "tmp4"),
        &[
            "--locked",
            p(&out.join(ISOS[1])),
            "--offline",
            "--output",
            p(&out4),
            "--cache-dir",
            p(&cache),
        ],
    ));
    assert_same_bytes(&out.join(ISOS[1]), &out4.join(ISOS[1]));
    assert_eq!(
        names(&out4).len(),
        4,
        "only the arm64 ISO, its .sha256 and its two SBOMs"
    );

    // Offline on an empty cache: exit 1 naming the first missing item, nothing left behind.
    let out5 = d.join("out5");
    let tmp5 = tmp_in(d, "tmp5");
    fails(
        &mut build(
            &config,
            &tmp5,
            &[
                "--locked",
                p(&lock),
                "--offline",
                "--output",
                p(&out5),
                "--cache-dir",
                p(&d.join("empty")),
            ],
        ),
        1,
        &[
            "with --offline: it is not in the cache",
            "hint: run the same build once with network",
        ],
    );
    assert_no_isos(&out5);
    assert_no_isos(&tmp5);
    // Without a lock, offline cannot choose an autoscaler release.
    fails(
        &mut build(
            &config,
            &tmp5,
            &[
                "--kubernetes",
                "1.33.1",
                "--network",
                "https://x.invalid/n.yaml",
                "--dashboard",
                "https://x.invalid/d.yaml",
                "--offline",
                "--output",
                p(&out5),
                "--cache-dir",
                p(&cache),
            ],
        ),
        1,
        &["offline", "--autoscaler-version"],
    );
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "an offline build connected to the world's ports"
    );
}

#[test]
fn drift_in_a_local_manifest_or_a_served_binary_fails_naming_it_and_both_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = World::start(Options::default());
    let tmp = tmp_in(d, "tmp");
    let (out, cache, lock) = (d.join("out"), d.join("cache"), d.join("run.lock"));
    // A local network.yaml: the world's, fetched by a first build.
    run(build(
        world.config_path(),
        &tmp,
        &[
            "--kubernetes",
            "1.33.1",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ],
    )
    .env("SOURCE_DATE_EPOCH", EPOCH));
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool(
        "bsdtar",
        [
            "-x",
            "-f",
            p(&out.join(ISOS[0])),
            "-C",
            p(&tree),
            "network.yaml",
        ],
    );
    let local = d.join("my network.yaml");
    fs::copy(tree.join("network.yaml"), &local).unwrap();
    fs::remove_dir_all(&out).unwrap();
    run(build(
        world.config_path(),
        &tmp,
        &[
            "--kubernetes",
            "1.33.1",
            "--network",
            p(&local),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
            "--lock-file",
            p(&lock),
        ],
    )
    .env("SOURCE_DATE_EPOCH", EPOCH));
    let locked: serde_json::Value = serde_json::from_slice(&fs::read(&lock).unwrap()).unwrap();
    let network = locked["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == "network.yaml")
        .unwrap();
    assert_eq!(network["source"], "file:my network.yaml", "no host path");
    let before = network["sha256_taken"].as_str().unwrap().to_owned();

    // The local file must be given again, and must not have changed.
    let out2 = d.join("out2");
    fails(
        &mut build(
            world.config_path(),
            &tmp,
            &[
                "--locked",
                p(&lock),
                "--output",
                p(&out2),
                "--cache-dir",
                p(&cache),
            ],
        ),
        2,
        &["my network.yaml", "--network FILE"],
    );
    let mut changed = fs::read(&local).unwrap();
    changed.extend_from_slice(b"# edited after locking\n");
    fs::write(&local, &changed).unwrap();
    fails(
        &mut build(
            world.config_path(),
            &tmp,
            &[
                "--locked",
                p(&lock),
                "--network",
                p(&local),
                "--output",
                p(&out2),
                "--cache-dir",
                p(&cache),
            ],
        ),
        1,
        &[
            "network.yaml",
            &before,
            &sha256_hex(&changed),
            "changed since it was locked",
        ],
    );
    assert_no_isos(&out2);
    assert_no_isos(&tmp);

    // Contradicting flags are usage errors.
    fails(
        &mut build(
            world.config_path(),
            &tmp,
            &[
                "--locked",
                p(&lock),
                "--network",
                p(&local),
                "--cni",
                "9.9.9",
                "--output",
                p(&out2),
                "--cache-dir",
                p(&cache),
            ],
        ),
        2,
        &["--cni \"9.9.9\" contradicts the lock, which says \"1.6.2\""],
    );
    fails(
        &mut build(
            world.config_path(),
            &tmp,
            &[
                "--locked",
                p(&lock),
                "--network",
                p(&local),
                "--arch",
                "arm64",
                "--output",
                p(&out2),
                "--cache-dir",
                p(&cache),
            ],
        ),
        2,
        &["locks amd64, not arm64"],
    );
    // A contradiction from the environment names the variable, one from the flag the flag.
    let locked_ccm = |ccm: &[&str]| {
        let mut cmd = build(
            world.config_path(),
            &tmp,
            &[
                &["--locked", p(&lock), "--network", p(&local)][..],
                ccm,
                &["--output", p(&out2), "--cache-dir", p(&cache)],
            ]
            .concat(),
        );
        cmd.env("CCM_VERSION", "v9.9.9");
        cmd
    };
    fails(
        &mut locked_ccm(&[]),
        2,
        &["CCM_VERSION=\"v9.9.9\" contradicts"],
    );
    fails(
        &mut locked_ccm(&["--ccm-version", "v8.8.8"]),
        2,
        &["--ccm-version \"v8.8.8\" contradicts"],
    );
    drop(world);

    // Upstream now serves another kubeadm (with a matching checksum): a locked build with a
    // fresh cache downloads it and refuses it.
    let kubeadm = "dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";
    let mut other = cks_iso_testworld::upstream::elf("amd64", 99, "kubeadm", 4096);
    other.extend_from_slice(b"republished");
    let snapshot = default_snapshot("1.33.1")
        .replace(kubeadm, other.clone(), "application/octet-stream")
        .replace(
            &format!("{kubeadm}.sha256"),
            sha256_hex(&other),
            "text/plain",
        );
    let world = World::start(Options {
        snapshot: Some(snapshot),
        ..Options::default()
    });
    fs::write(&local, fs::read(tree.join("network.yaml")).unwrap()).unwrap();
    let locked_kubeadm = locked["arches"]["amd64"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "k8s/kubeadm")
        .unwrap()["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    fails(
        &mut build(
            world.config_path(),
            &tmp,
            &[
                "--locked",
                p(&lock),
                "--network",
                p(&local),
                "--output",
                p(&out2),
                "--cache-dir",
                p(&d.join("fresh")),
            ],
        ),
        1,
        &["kubeadm", &locked_kubeadm, &sha256_hex(&other), "hint:"],
    );
    assert_no_isos(&out2);
    assert_no_isos(&tmp);
}

#[test]
fn verify_holds_the_embedded_lock_to_the_iso() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let world = World::start(Options::default());
    let (out, cache) = (d.join("out"), d.join("cache"));
    run(build(
        world.config_path(),
        &tmp_in(d, "tmp"),
        &[
            "--kubernetes",
            "1.33.1",
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(&out),
            "--cache-dir",
            p(&cache),
        ],
    )
    .env("SOURCE_DATE_EPOCH", EPOCH));
    drop(world);
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    tool(
        "bsdtar",
        ["-x", "-f", p(&out.join(ISOS[0])), "-C", p(&tree)],
    );
    let path = tree.join("cks-iso.lock");
    let mut lock: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    lock["arches"]["amd64"]["files"][0]["sha256"] = serde_json::json!("0".repeat(64));
    lock["request"]["crictl"] = serde_json::json!("1.99.0");
    fs::write(&path, serde_json::to_string_pretty(&lock).unwrap()).unwrap();
    let bad = d.join("bad.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&bad), "--source-date-epoch", EPOCH]));
    let report = fails(
        cks_iso().arg("verify").arg(&bad),
        1,
        &["cks-iso.lock", "crictl \"1.99.0\"", &"0".repeat(64)],
    );
    assert!(report.contains("versions.txt says"), "{report}");
}

#[test]
fn a_lock_that_is_not_one_is_a_usage_error_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out");
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "not-json.lock",
            b"{ this is not json".to_vec(),
            vec!["is not a cks-iso lock"],
        ),
        (
            "future.lock",
            br#"{"version": 2, "cks_iso": "9.0.0"}"#.to_vec(),
            vec!["lock version 2", "reads version 1"],
        ),
        (
            "text.lock",
            b"hello".to_vec(),
            vec!["neither a cks-iso lock nor a readable ISO"],
        ),
    ];
    for (name, body, needles) in cases {
        let file = d.join(name);
        fs::write(&file, body).unwrap();
        let mut needles = needles;
        needles.push(name);
        needles.push("hint:");
        fails(
            &mut build(
                &d.join("none.yaml"),
                d,
                &[
                    "--locked",
                    p(&file),
                    "--output",
                    p(&out),
                    "--cache-dir",
                    p(&d.join("c")),
                ],
            ),
            2,
            &needles,
        );
    }
    // A truncated ISO.
    let tree = d.join("tree");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("big.bin"), noise(7, 4 << 20)).unwrap();
    let iso = d.join("whole.iso");
    run(cks_iso().args(["iso", p(&tree), "-o", p(&iso)]));
    let bytes = fs::read(&iso).unwrap();
    let cut = d.join("cut.iso");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    fails(
        &mut build(
            &d.join("none.yaml"),
            d,
            &[
                "--locked",
                p(&cut),
                "--output",
                p(&out),
                "--cache-dir",
                p(&d.join("c")),
            ],
        ),
        2,
        &["cut.iso", "hint:"],
    );
    // An ISO without a lock.
    fails(
        &mut build(
            &d.join("none.yaml"),
            d,
            &[
                "--locked",
                p(&iso),
                "--output",
                p(&out),
                "--cache-dir",
                p(&d.join("c")),
            ],
        ),
        2,
        &["whole.iso:cks-iso.lock", "hint:"],
    );
    assert_no_isos(&out);
}
