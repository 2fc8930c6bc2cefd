//! The chaos soak: seeded random faults on a fifth of the requests to the registry, the upstream
//! stand-in and git — server errors, 429 with `Retry-After`, resets before and during a body,
//! truncation, an empty 200 that promised a length, a flipped byte, a stall past the idle timeout,
//! Range ignored, refused or misanswered, a slow trickle — with the default retry settings. Each
//! build must end either in an ISO byte-identical to the fault-free one, or in exit 1 naming what
//! failed with no ISO, no partial file and no work dir left. At least 90 % must succeed. Prints the
//! fault tally and the outcome of every build before judging. `CKS_ISO_SOAK_BUILDS` sets how many
//! (default 10: with fewer, "nine in ten" would mean "all", and a build that ran out of retries
//! cleanly — an outcome the goal allows — would fail the soak).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::*;
use cks_iso_testworld::chaos::Chaos;
use cks_iso_testworld::faults::FaultProxy;
use cks_iso_testworld::world::{Options, World};

const ISO: &str = "setup-v1.33.1-x86_64.iso";
/// The fault rate the goal is stated for; `CKS_ISO_SOAK_RATE` (0–1) explores others.
const RATE: f64 = 0.2;
const IDLE_TIMEOUT: u64 = 2;

/// `http://host:port` of a URL.
fn origin(url: &str) -> String {
    let rest = url
        .strip_prefix("http://")
        .expect("the world speaks plain HTTP");
    format!("http://{}", rest.split('/').next().unwrap())
}

fn build(config: &Path, dir: &Path, world: &World) -> std::process::Output {
    let tmp = dir.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    build_in(config, &tmp)
        .args(["--no-progress", "--kubernetes", "1.33.1"])
        .args([
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
        ])
        .args(["--idle-timeout", &IDLE_TIMEOUT.to_string()])
        .arg("--output")
        .arg(dir.join("out"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .output()
        .unwrap()
}

/// The value of the environment variable `var`, or `default` when unset or unreadable.
fn env_or<T: std::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fault-free ISO every build is held to, built in `d/clean`.
fn fault_free_iso(world: &World, d: &Path) -> Vec<u8> {
    let clean = d.join("clean");
    let out = build(world.config_path(), &clean, world);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::read(clean.join("out").join(ISO)).unwrap()
}

/// Proxies in front of the registry, the upstream stand-in and git, and a configuration in `d`
/// that names them (beside the world's Sigstore root, which it names relative to itself).
fn behind_fault_proxies(world: &World, d: &Path) -> (Vec<FaultProxy>, PathBuf) {
    let bases = [
        origin(&world.registry_url()),
        origin(&world.upstream().url()),
        origin(&world.autoscaler_git_url()),
    ];
    let proxies: Vec<FaultProxy> = bases.iter().map(|b| FaultProxy::start(b)).collect();
    let mut config = world.config_yaml().to_owned();
    for (base, proxy) in bases.iter().zip(&proxies) {
        config = config.replace(base.as_str(), &proxy.url());
    }
    let registry_proxy = proxies[0].url().trim_start_matches("http://").to_owned();
    config = config.replace(
        "insecure-registries: [",
        &format!("insecure-registries: [\"{registry_proxy}\", "),
    );
    let config_path = d.join("chaos.yaml");
    fs::write(&config_path, &config).unwrap();
    fs::copy(world.trusted_root_path(), d.join("trusted_root.json")).unwrap();
    (proxies, config_path)
}

/// What the soak saw: faults by kind, requests, each build's (number, faults, time, verdict), and
/// the builds that ended neither identical nor cleanly (reported after the tally, then fatal).
#[derive(Default)]
struct Soak {
    tally: BTreeMap<String, usize>,
    requests: usize,
    outcomes: Vec<(u64, usize, Duration, String)>,
    broken: Vec<String>,
}

impl Soak {
    /// Build `i` through `proxies` faulting at `rate` with seeds of its own, judged against
    /// `reference`; its faults, time and verdict recorded.
    fn run_build(
        &mut self,
        i: u64,
        rate: f64,
        proxies: &[FaultProxy],
        setup: (&World, &Path, &Path),
        reference: &[u8],
    ) {
        let (world, config, d) = setup;
        for (n, proxy) in proxies.iter().enumerate() {
            proxy.clear_log();
            let seed = 0x5eed_0000 + i * 16 + n as u64;
            let mix = Chaos::network_mix(Duration::from_secs(IDLE_TIMEOUT));
            proxy.chaos(Some(Chaos::new(seed, rate, mix)));
        }
        let run = d.join(format!("run{i}"));
        let begun = Instant::now();
        let out = build(config, &run, world);
        let took = begun.elapsed();
        let mut faults = 0;
        for proxy in proxies {
            let log = proxy.log();
            self.requests += log.len();
            for name in log.into_iter().filter_map(|r| r.fault) {
                let kind = name.split(' ').take(2).collect::<Vec<_>>().join(" ");
                *self.tally.entry(kind).or_default() += 1;
                faults += 1;
            }
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let verdict = judge(&run, &out, &stderr, reference);
        if verdict.starts_with("BROKEN") {
            self.broken.push(format!("build {i}: {verdict}\n{stderr}"));
        }
        self.outcomes.push((i, faults, took, verdict));
    }

    /// Prints the fault tally and every build's outcome; how many builds succeeded.
    fn report(&self, builds: u64, rate: f64, started: Instant) -> u64 {
        eprintln!(
            "\nchaos soak: {builds} builds, {} requests, {:.0} % faulted",
            self.requests,
            rate * 100.0
        );
        eprintln!("fault tally:");
        for (kind, count) in &self.tally {
            eprintln!("  {count:>5}  {kind}");
        }
        eprintln!("outcomes:");
        for (i, faults, took, verdict) in &self.outcomes {
            eprintln!(
                "  build {i}: {faults:>3} faults, {:>5.1} s, {verdict}",
                took.as_secs_f64()
            );
        }
        let succeeded = self
            .outcomes
            .iter()
            .filter(|o| o.3 == "identical ISO")
            .count() as u64;
        eprintln!(
            "{succeeded} of {builds} succeeded ({:.0} %) in {:.0} s",
            100.0 * succeeded as f64 / builds as f64,
            started.elapsed().as_secs_f64()
        );
        succeeded
    }
}

#[test]
fn builds_under_a_fifth_of_requests_faulted_end_identical_or_cleanly_and_nine_in_ten_succeed() {
    let rate: f64 = env_or("CKS_ISO_SOAK_RATE", RATE);
    let builds: u64 = env_or("CKS_ISO_SOAK_BUILDS", 10);
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reference = fault_free_iso(&world, d);
    let (proxies, config) = behind_fault_proxies(&world, d);
    let mut soak = Soak::default();
    let started = Instant::now();
    for i in 0..builds {
        soak.run_build(i, rate, &proxies, (&world, &config, d), &reference);
    }
    for proxy in &proxies {
        proxy.chaos(None);
    }
    let succeeded = soak.report(builds, rate, started);
    assert!(soak.broken.is_empty(), "{}", soak.broken.join("\n\n"));
    let faulted: usize = soak.tally.values().sum();
    assert!(
        faulted as f64 >= soak.requests as f64 * rate * 0.5,
        "the proxies faulted only {faulted} of {} requests",
        soak.requests
    );
    assert!(
        succeeded * 10 >= builds * 9,
        "only {succeeded} of {builds} builds succeeded under chaos"
    );
}

/// How one build under chaos ended: `identical ISO`, `exit 1: <why>`, or `BROKEN: <what>` for
/// every outcome the soak forbids (another ISO, another exit code, no reason given, a partial
/// file or work dir left).
fn judge(run: &Path, out: &std::process::Output, stderr: &str, reference: &[u8]) -> String {
    let leftovers = names(&run.join("tmp"));
    if !leftovers.is_empty() {
        return format!("BROKEN: left a work dir: {leftovers:?}");
    }
    if out.status.success() {
        return match fs::read(run.join("out").join(ISO)) {
            Ok(iso) if iso == reference => "identical ISO".to_owned(),
            Ok(_) => "BROKEN: succeeded with an ISO that differs from the fault-free one".into(),
            Err(e) => format!("BROKEN: succeeded without an ISO: {e}"),
        };
    }
    if out.status.code() != Some(1) {
        return format!("BROKEN: exit {:?} instead of 1", out.status.code());
    }
    if !stderr.contains("error:") {
        return "BROKEN: failed without saying why".into();
    }
    let left = names(&run.join("out"));
    if !left.is_empty() {
        return format!("BROKEN: failed and left {left:?}");
    }
    let why: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("error:"))
        .take_while(|l| !l.starts_with("hint:"))
        .collect();
    format!("exit 1: {}", why.join(" / "))
}
