//! Keyless signing's test world proven against the real Sigstore client, then cks-iso judged by
//! it: the world's OIDC issuer, Fulcio and Rekor (`POST /api/v1/log/entries`) must let
//! sigstore-python (`.venv-sbom/bin/sigstore`, from PyPI) sign with a token the issuer signed and
//! refuse one it did not, and the bundle the real client writes must pass its own offline
//! verification against the world's trusted root. Only then do `build --sign` and `cks-iso sign
//! --identity-token` count as checked by these stand-ins.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use cks_iso_testworld::fulcio::{FulcioServer, client_trust_config, signing_config};
use cks_iso_testworld::oidc::{Claims, OidcIssuer};
use cks_iso_testworld::rekor::RekorServer;
use cks_iso_testworld::sigstore::Sigstore;

use crate::support::*;

/// sigstore-python's command line, with no way out but loopback and a home of its own.
pub(crate) fn sigstore_cli(home: &Path) -> Command {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-sbom/bin/sigstore");
    assert!(
        bin.exists(),
        "sigstore-python is not installed in .venv-sbom: run `make deps` first"
    );
    let mut cmd = Command::new(bin);
    no_internet(&mut cmd);
    cmd.env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("SIGSTORE_ID_TOKEN");
    cmd
}

/// `sigstore verify identity --offline` of `file` with `bundle` against the trust configuration.
pub(crate) fn sigstore_verifies(
    home: &Path,
    trust: &Path,
    file: &Path,
    bundle: &Path,
    identity: &str,
    issuer: &str,
) -> Output {
    sigstore_cli(home)
        .arg("--trust-config")
        .arg(trust)
        .args(["verify", "identity", "--offline", "--bundle"])
        .arg(bundle)
        .args(["--cert-identity", identity, "--cert-oidc-issuer", issuer])
        .arg(file)
        .output()
        .unwrap()
}

/// The world's keyless services alone (no registry, no upstream): what the client needs.
struct Keyless {
    sigstore: Arc<Sigstore>,
    rekor: RekorServer,
    oidc: OidcIssuer,
    fulcio: FulcioServer,
}

impl Keyless {
    fn start() -> Self {
        let sigstore = Arc::new(Sigstore::generate());
        let rekor = RekorServer::start();
        rekor.accept_entries(sigstore.clone());
        let oidc = OidcIssuer::start();
        let fulcio = FulcioServer::start(sigstore.clone(), vec![oidc.url().to_owned()]);
        Self {
            sigstore,
            rekor,
            oidc,
            fulcio,
        }
    }

    /// The client trust configuration naming these services, written under `dir`.
    fn trust_config(&self, dir: &Path) -> PathBuf {
        let config = signing_config(&self.fulcio.url(), &self.rekor.url(), self.oidc.url());
        let path = dir.join("trust_config.json");
        fs::write(&path, client_trust_config(&config, self.sigstore.trusted_root())).unwrap();
        path
    }
}

fn sign(home: &Path, trust: &Path, token: &str, file: &Path, bundle: &Path) -> Output {
    sigstore_cli(home)
        .arg("--trust-config")
        .arg(trust)
        .args(["sign", "--identity-token", token, "--bundle"])
        .arg(bundle)
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn the_real_sigstore_client_signs_with_the_world_stand_ins_and_verifies_offline() {
    let world = Keyless::start();
    let dir = tempfile::tempdir().unwrap();
    let trust = world.trust_config(dir.path());
    let file = dir.path().join("artifact.iso");
    fs::write(&file, b"an ISO, as far as Sigstore cares").unwrap();

    // A person's token (an e-mail identity): signed, logged, and accepted offline.
    let person = "builder@example.org";
    let token = world.oidc.mint(&Claims::email(person));
    let bundle = dir.path().join("person.sigstore.json");
    let o = sign(dir.path(), &trust, &token, &file, &bundle);
    assert!(o.status.success(), "sigstore sign:\n{}", combined(&o));
    let o = sigstore_verifies(dir.path(), &trust, &file, &bundle, person, world.oidc.url());
    assert!(o.status.success(), "sigstore verify:\n{}", combined(&o));
    let written: serde_json::Value = serde_json::from_slice(&fs::read(&bundle).unwrap()).unwrap();
    let entry = &written["verificationMaterial"]["tlogEntries"][0];
    assert_eq!(entry["logIndex"], "0", "{written:#}");
    assert!(entry["inclusionProof"]["checkpoint"]["envelope"].is_string());
    assert_eq!(world.rekor.requests(), ["POST /api/v1/log/entries"]);

    // Another identity than the one that signed: refused by the client's own verifier.
    let o = sigstore_verifies(
        dir.path(),
        &trust,
        &file,
        &bundle,
        "someone@example.org",
        world.oidc.url(),
    );
    assert!(!o.status.success(), "{}", combined(&o));

    // A workload's token (a URI subject, as a CI job's): a URI SAN, accepted as that identity.
    let job = "https://ci.example.org/cks-iso/.ci/run@refs/heads/main";
    let token = world.oidc.mint(&Claims::workload(job));
    let bundle = dir.path().join("job.sigstore.json");
    let o = sign(dir.path(), &trust, &token, &file, &bundle);
    assert!(o.status.success(), "sigstore sign:\n{}", combined(&o));
    let o = sigstore_verifies(dir.path(), &trust, &file, &bundle, job, world.oidc.url());
    assert!(o.status.success(), "sigstore verify:\n{}", combined(&o));

    // A token the issuer did not sign: Fulcio refuses it, the client fails, nothing is logged.
    let forged = world.oidc.forge(&Claims::email(person));
    let bundle = dir.path().join("forged.sigstore.json");
    let o = sign(dir.path(), &trust, &forged, &file, &bundle);
    assert!(!o.status.success(), "a forged token signed:\n{}", combined(&o));
    assert!(!bundle.exists());
    assert_eq!(
        world.fulcio.requests().last().map(String::as_str),
        Some("POST /api/v2/signingCert 400")
    );
    assert_eq!(world.rekor.requests().len(), 2, "{:?}", world.rekor.requests());
}
