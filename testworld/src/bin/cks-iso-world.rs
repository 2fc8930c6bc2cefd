//! Runs one command inside the local upstream world, for `make demo` and for trying cks-iso by
//! hand without the internet.
//!
//! `cks-iso-world CMD [ARGS…]` starts the whole [`World`]: real `git http-backend` with
//! autoscaler-shaped tags, the upstream stand-in, and a `docker-registry` holding every image a
//! `cks-iso build` of Kubernetes 1.33.1 pulls for amd64 and arm64. It writes a cks-iso
//! configuration file (download and git mirrors, registry mirrors, insecure registries), runs
//! `CMD` with `CKS_ISO_CONFIG` pointing at it and `CKS_WORLD_NETWORK` / `CKS_WORLD_DASHBOARD` /
//! `CKS_WORLD_HEADLAMP` holding the manifest URLs to pass as `--network` / `--dashboard` /
//! `--headlamp` and `CKS_WORLD_TRUSTED_ROOT` the world's Sigstore trusted root for `verify
//! --signatures --trusted-root` and `XDG_CACHE_HOME` a cache of the world's own (never the
//! user's: the world's stand-ins carry the real upstream URLs and tags), stops everything, and
//! exits with `CMD`'s status. `CKS_WORLD_FAR_SIDE=DIR` also writes the world's trusted root to
//! `DIR/trusted_root.json`, which outlives the world, for the far side of an air gap. With no
//! command it prints the configuration and serves until stdin closes. `CKS_WORLD_KUBERNETES`
//! picks another Kubernetes release, `CKS_WORLD_ALSO_KUBERNETES` serves more beside it
//! (comma-separated); `CKS_WORLD_OWN_LAYER_KIB`
//! gives every image an incompressible layer of that many KiB (4 by default), for benchmarks;
//! `CKS_WORLD_SHAPE=<ms>,<mbit>` puts a WAN-shaping proxy in front of the registry, the upstream
//! stand-in and Rekor (+ms per request, mbit per connection).
//! `CKS_WORLD_BINARY_BUNDLES=only` signs the Kubernetes binaries onto the world's Rekor v2 log
//! and serves a `<file>.sigstore.json` bundle beside each instead of the `.sig`/`.cert`, and
//! `=beside` serves the bundles beside the pairs.
//!
//! Ctrl-C or SIGTERM stops the world cleanly (servers stopped, temp dirs removed): the command,
//! which gets a terminal's Ctrl-C itself, has 5 s to exit before it is killed.

use std::io::Read;
use std::process::{Command, ExitCode};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cks_iso_testworld::rekor_v2::{BundleOptions, publish_bundles};
use cks_iso_testworld::shaper::Shape;
use cks_iso_testworld::world::{Options, World};

/// What `cks-iso-world --help` prints: the module's words, for a person at a shell.
const HELP: &str = "\
Runs one command inside cks-iso's local upstream world (no internet needed).

Usage: cks-iso-world [COMMAND [ARGS...]]

Starts git with the autoscaler tags, the github.com / dl.k8s.io / raw.githubusercontent.com
stand-in, a docker-registry holding every image of a Kubernetes 1.33.1 build (amd64, arm64) and
a Sigstore of its own; writes a cks-iso configuration mapping upstream to them; runs COMMAND
with these variables set; stops everything and exits with COMMAND's status:

  CKS_ISO_CONFIG          the configuration (mirrors, registry mirrors, trusted root)
  CKS_WORLD_NETWORK       the manifest URL to pass as --network
  CKS_WORLD_DASHBOARD     the manifest URL to pass as --dashboard
  CKS_WORLD_HEADLAMP      the manifest URL to pass as --headlamp
  CKS_WORLD_TRUSTED_ROOT  the world's Sigstore trusted_root.json, for verify --trusted-root
  CKS_WORLD_SIGNING_CONFIG  a Sigstore signing config naming the world's Fulcio and Rekor,
                          for build --sign --signing-config
  CKS_WORLD_OIDC_ISSUER   the world's OIDC issuer URL, for --certificate-oidc-issuer
  CKS_WORLD_ID_TOKEN      an identity token of builder@cks-world.example from that issuer,
                          valid an hour, for --identity-token (SIGSTORE_ID_TOKEN)
  XDG_CACHE_HOME          a cache of the world's own, removed when it stops: the world's
                          stand-ins carry the real upstream URLs, so your ~/.cache/cks-iso
                          is never used

Without COMMAND it prints the configuration and serves until stdin closes (Ctrl-D) or Ctrl-C.

Git commits are the same in every start; the Sigstore (keys, certificates, logs) is new in each,
so a lock is rebuilt with --locked inside the start that wrote it.

Environment:
  CKS_WORLD_KUBERNETES      another Kubernetes release (default 1.33.1)
  CKS_WORLD_ALSO_KUBERNETES more releases served beside it, comma-separated (e.g. 1.33.0,
                            for an upgrade)
  CKS_WORLD_OWN_LAYER_KIB   an incompressible layer of that many KiB in every image (default 4)
  CKS_WORLD_SHAPE=MS,MBIT   a WAN-shaping proxy before the registry, upstream and Rekor
  CKS_WORLD_BINARY_BUNDLES  only | beside: Sigstore bundles for the Kubernetes binaries
  CKS_WORLD_FAR_SIDE=DIR    write the world's trusted root to DIR/trusted_root.json, which
                            outlives the world: the far side of an air gap verifies with it
                            (docs/guide/upgrades.md)

Example:
  cks-iso-world sh -c 'cks-iso build --kubernetes 1.33.1 --arch amd64 \\
      --network \"$CKS_WORLD_NETWORK\" --dashboard \"$CKS_WORLD_DASHBOARD\" \\
      --headlamp \"$CKS_WORLD_HEADLAMP\" --output out'
";

fn main() -> ExitCode {
    if let Some(first) = std::env::args().nth(1)
        && matches!(first.as_str(), "-h" | "--help")
    {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let mut options = Options::default();
    if let Ok(v) = std::env::var("CKS_WORLD_KUBERNETES") {
        options.kubernetes = v;
    }
    if let Ok(v) = std::env::var("CKS_WORLD_ALSO_KUBERNETES") {
        options.also_kubernetes = v.split(',').map(|v| v.trim().to_owned()).collect();
    }
    if let Ok(spec) = std::env::var("CKS_WORLD_SHAPE") {
        options.shape = Some(Shape::from_spec(&spec));
    }
    let bundles = std::env::var("CKS_WORLD_BINARY_BUNDLES").ok();
    let drop_pair = match bundles.as_deref() {
        None => None,
        Some("only") => Some(true),
        Some("beside") => Some(false),
        Some(other) => {
            eprintln!("cks-iso-world: CKS_WORLD_BINARY_BUNDLES={other:?}: use only or beside");
            return ExitCode::from(2);
        }
    };
    let world = World::start(options);
    if let Some(drop_pair) = drop_pair {
        publish_bundles(&world, &BundleOptions::default(), drop_pair);
    }
    eprintln!(
        "cks-iso-world: Kubernetes {}, autoscaler {}, {} images in {} (amd64, arm64)",
        world.kubernetes(),
        world.autoscaler_version().unwrap_or("none"),
        world.images().len(),
        world.registry_url(),
    );
    eprintln!(
        "cks-iso-world: CKS_ISO_CONFIG={}",
        world.config_path().display()
    );
    eprintln!("cks-iso-world: CKS_WORLD_NETWORK={}", world.network_url());
    eprintln!(
        "cks-iso-world: CKS_WORLD_DASHBOARD={}",
        world.dashboard_url()
    );
    eprintln!("cks-iso-world: CKS_WORLD_HEADLAMP={}", world.headlamp_url());
    eprintln!(
        "cks-iso-world: CKS_WORLD_TRUSTED_ROOT={}",
        world.trusted_root_path().display()
    );
    eprintln!(
        "cks-iso-world: XDG_CACHE_HOME={} (the world's own cache)",
        world.cache_home().display()
    );
    if let Some(dir) = std::env::var_os("CKS_WORLD_FAR_SIDE") {
        match world.export_far_side(std::path::Path::new(&dir)) {
            Ok(root) => eprintln!(
                "cks-iso-world: wrote the trusted root for the far side: {}",
                root.display()
            ),
            Err(e) => {
                eprintln!(
                    "cks-iso-world: cannot write the trusted root into CKS_WORLD_FAR_SIDE={}: {e}",
                    std::path::Path::new(&dir).display()
                );
                return ExitCode::from(2);
            }
        }
    }

    // Signals and the end of stdin both arrive here, so the world is always dropped.
    let (stop, stopped) = mpsc::channel::<()>();
    let on_signal = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = on_signal.send(());
    }) {
        eprintln!("cks-iso-world: cannot catch Ctrl-C: {e}");
    }

    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        print!("{}", world.config_yaml());
        for image in world.images() {
            println!(
                "# image {} ({}: {})",
                image.reference, image.source, image.shape
            );
        }
        eprintln!("cks-iso-world: serving; close stdin (Ctrl-D) or Ctrl-C to stop");
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            let _ = stop.send(());
        });
        let _ = stopped.recv();
        drop(world);
        return ExitCode::SUCCESS;
    };
    let child = Command::new(program)
        .args(rest)
        .envs(world.shell_env())
        .spawn();
    let status = child.and_then(|mut child| {
        let mut deadline = None;
        loop {
            if let Some(status) = child.try_wait()? {
                break Ok(status);
            }
            if deadline.is_none() && stopped.try_recv().is_ok() {
                deadline = Some(Instant::now() + Duration::from_secs(5));
            }
            if deadline.is_some_and(|d| Instant::now() > d) {
                eprintln!("cks-iso-world: stopping {program}");
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    drop(world);
    match status {
        Ok(s) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Err(e) => {
            eprintln!("cks-iso-world: cannot run {program}: {e}");
            ExitCode::from(127)
        }
    }
}
