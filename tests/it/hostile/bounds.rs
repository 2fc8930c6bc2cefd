//! Hostile bodies: registries and mirrors that send without end, lie about sizes, trickle a byte
//! at a time, or declare exabytes; FIFOs and devices given as inputs. Each scenario runs the real
//! binary against the local world and asserts that it stops within its bound: bytes sent, bytes
//! written and peak memory.

use std::fs;

use crate::support::hostile::*;
use crate::support::*;

/// The most a run fed an endless or lying body may hold in memory: its own working set and one
/// capped manifest, nowhere near the gigabytes an unbounded read takes.
const PEAK_RSS: u64 = 128 << 20;

#[test]
fn a_blob_served_without_end_stops_at_its_declared_size() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, _) = world_in(d);
    let proxy = FaultProxy::start(&world.registry_url());
    proxy.add(Rule::path_regex(r"/blobs/sha256:").fault(Fault::Endless));
    let config = config_via(&world, d, &world.registry_url(), &proxy.url());
    let cache = d.join("cache");
    let out = d.join("out");
    let mut cmd = cks_iso();
    cmd.env("CKS_ISO_CONFIG", &config)
        .args(["pull", "registry.k8s.io/pause:3.10", "--arch", "amd64"])
        .args(["--out", p(&out), "--cache-dir", p(&cache), "--retries", "2"])
        .args(["--jobs", "1", "--no-progress"]);
    let (pulled, rss) =
        output_within_rss(&mut cmd, 60).expect("the pull still reads an endless blob");
    let said = combined(&pulled);
    eprintln!("peak RSS of the pull from an endless blob: {rss} bytes");
    assert!(rss < PEAK_RSS, "the pull's peak RSS was {rss} bytes");
    assert_eq!(pulled.status.code(), Some(1), "{said}");
    assert!(said.contains("does not match"), "{said}");
    // The size is known before a byte is read: one byte past it ends each attempt.
    let sent = proxy.endless_bytes();
    assert!(
        sent < 32 << 20,
        "{sent} bytes were sent before the pull stopped"
    );
    let kept = bytes_under(&cache);
    assert!(kept < 1 << 20, "{kept} bytes written into the cache");
    let mut per_blob = std::collections::BTreeMap::<String, usize>::new();
    for r in proxy.requests_to("/blobs/sha256:") {
        *per_blob.entry(r.path).or_default() += 1;
    }
    assert!(
        per_blob.values().all(|&n| n <= 2),
        "a lying blob was fetched more than twice: {per_blob:?}"
    );
}

#[test]
fn locked_files_stop_at_the_locked_size_and_manifests_at_their_cap() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let lock = d.join("run.lock");
    let mut args = world_args(&world, world.dashboard_url());
    let (out, cache) = (d.join("out"), d.join("cache"));
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    args.extend(["--lock-file", p(&lock)]);
    run(&mut build(&config, d, &args));

    // Release downloads answer 302 to the CDN: the lie is told there.
    let cdn = FaultProxy::start(&world.upstream().cdn_url());
    cdn.add(Rule::path_regex(r"/amd64/kubeadm\?").fault(Fault::Endless));
    world.upstream().redirect_cdn_to(&cdn.url());
    let cache2 = d.join("cache2");
    let mut cmd = build(
        &config,
        d,
        &[
            "--locked",
            p(&lock),
            "--output",
            p(&d.join("out2")),
            "--cache-dir",
            p(&cache2),
        ],
    );
    cmd.args(["--retries", "2"]);
    let (built, rss) =
        output_within_rss(&mut cmd, 90).expect("the locked build still reads kubeadm");
    let said = combined(&built);
    eprintln!("peak RSS of the locked build from an endless kubeadm: {rss} bytes");
    assert!(
        rss < PEAK_RSS,
        "the locked build's peak RSS was {rss} bytes"
    );
    assert_eq!(built.status.code(), Some(1), "{said}");
    assert!(said.contains("kubeadm"), "{said}");
    let sent = cdn.endless_bytes();
    assert!(sent > 0, "kubeadm was not fetched through the lying CDN");
    assert!(sent < 32 << 20, "{sent} bytes of kubeadm were sent");

    // A manifest URL without end stops at the documented cap, which the error names.
    let proxy = FaultProxy::start(&world.upstream().url());
    proxy.add(Rule::path_contains("dashboard").fault(Fault::Endless));
    let dashboard = format!(
        "{}/raw.githubusercontent.com/{}",
        proxy.url(),
        cks_iso_testworld::upstream::DASHBOARD_PATH
    );
    let mut args = world_args(&world, &dashboard);
    let out3 = d.join("out3");
    args.extend(["--output", p(&out3), "--cache-dir", p(&cache2)]);
    let (built, rss) = output_within_rss(&mut build(&config, d, &args), 90)
        .expect("the build still reads an endless manifest");
    let said = combined(&built);
    eprintln!("peak RSS of the build from an endless manifest: {rss} bytes");
    assert!(rss < PEAK_RSS, "the build's peak RSS was {rss} bytes");
    assert_eq!(built.status.code(), Some(1), "{said}");
    assert!(said.contains("the body is larger than 32.00 MiB"), "{said}");
    let sent = proxy.endless_bytes();
    assert!(sent < 64 << 20, "{sent} bytes of the manifest were sent");
}

#[test]
fn fifos_devices_and_huge_local_files_are_refused_as_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let fifo = d.join("fifo");
    tool("mkfifo", [p(&fifo)]);
    let huge = d.join("huge.yaml");
    let f = fs::File::create(&huge).unwrap();
    f.set_len(33 << 20).unwrap();
    let (out, cache) = (d.join("out"), d.join("cache"));
    for input in [p(&fifo), "/dev/zero", p(&huge)] {
        let mut args = world_args(&world, world.dashboard_url());
        args[5] = input;
        args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
        let (built, rss) = output_within_rss(&mut build(&config, d, &args), 60)
            .unwrap_or_else(|| panic!("the build still reads {input}"));
        let said = combined(&built);
        eprintln!("peak RSS of the build given {input}: {rss} bytes");
        assert!(
            rss < PEAK_RSS,
            "{input}: the build's peak RSS was {rss} bytes"
        );
        assert_eq!(built.status.code(), Some(1), "{input}: {said}");
        assert!(said.contains(input), "{said}");
        assert!(
            said.contains("not a regular file") || said.contains("larger than 32.00 MiB"),
            "{said}"
        );
    }
    for args in [
        vec!["verify", p(&fifo)],
        vec!["diff", p(&fifo), p(&fifo)],
        vec!["build", "--locked", p(&fifo)],
    ] {
        let out = output_within(cks_iso().args(&args), 30)
            .unwrap_or_else(|| panic!("{args:?} hangs on a FIFO"));
        let said = combined(&out);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(said.contains("not a regular file"), "{args:?}: {said}");
    }
}

#[test]
fn a_reply_trickled_a_byte_at_a_time_ends_despite_the_idle_timeout() {
    use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, config) = world_in(d);
    let proxy = FaultProxy::start(&world.upstream().url());
    let pause = std::time::Duration::from_secs(2);
    proxy.add(Rule::path_contains("dashboard").fault(Fault::Trickle { chunk: 1, pause }));
    let dashboard = format!(
        "{}/raw.githubusercontent.com/{}",
        proxy.url(),
        cks_iso_testworld::upstream::DASHBOARD_PATH
    );
    let mut args = world_args(&world, &dashboard);
    let (out, cache) = (d.join("out"), d.join("cache"));
    args.extend(["--output", p(&out), "--cache-dir", p(&cache)]);
    args.extend(["--idle-timeout", "5", "--retries", "1"]);
    let started = std::time::Instant::now();
    let built = output_within(&mut build(&config, d, &args), 60)
        .expect("a trickled reply is still being read after 60 s");
    let said = combined(&built);
    assert_eq!(built.status.code(), Some(1), "{said}");
    assert!(said.contains("too slowly"), "{said}");
    assert!(started.elapsed().as_secs() < 50, "{:?}", started.elapsed());
}

#[test]
fn a_layer_declaring_exabytes_fails_as_a_lie_not_as_a_full_disk() {
    use cks_iso_testworld::images::{push_blob, push_manifest};
    use cks_iso_testworld::upstream::sha256_hex;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (world, _) = world_in(d);
    let host = world.registry_host();
    let repo = "hostile/huge";
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let layer = b"a real layer, declared as 2^62 bytes";
    let (config_digest, layer_digest) = (
        format!("sha256:{}", sha256_hex(config)),
        format!("sha256:{}", sha256_hex(layer)),
    );
    push_blob(&host, repo, &config_digest, config).unwrap();
    push_blob(&host, repo, &layer_digest, layer).unwrap();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{layer_digest}","size":{}}}]}}"#,
        config.len(),
        1u64 << 62
    );
    push_manifest(
        &host,
        repo,
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        manifest.as_bytes(),
    )
    .unwrap();
    let cache = d.join("cache");
    let out = d.join("out");
    let reference = format!("{host}/{repo}:1");
    let said = fails(
        cks_iso()
            .args([
                "pull",
                &reference,
                "--arch",
                "amd64",
                "--insecure-registry",
                &host,
            ])
            .args(["--out", p(&out), "--cache-dir", p(&cache), "--no-progress"]),
        1,
        &[&reference, "declares 4611686018427387904 bytes", "1.00 TiB"],
    );
    assert!(!said.contains("too large"), "{said}");
    assert!(!said.contains("cache writable"), "{said}");
}

/// The RSS the bounds above are judged by is the command's own, not this test process's: a
/// child spawned from a process holding 256 MiB reported at least that much through `wait4`
/// (Linux keeps the high-water mark of the image a process leaves at exec), which failed the
/// bounds whenever the whole suite had grown this binary.
#[test]
fn the_measured_peak_rss_is_the_commands_own() {
    let ballast = vec![1u8; 256 << 20];
    let (out, rss) = output_within_rss(&mut std::process::Command::new("true"), 10).unwrap();
    assert!(out.status.success());
    assert!(rss < 32 << 20, "`true` measured at {} MiB", rss >> 20);
    assert_eq!(
        ballast.iter().map(|&b| u64::from(b)).sum::<u64>(),
        256 << 20
    );
}
