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
use cks_iso_testworld::world::{Options, World};

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
        fs::write(
            &path,
            client_trust_config(&config, self.sigstore.trusted_root()),
        )
        .unwrap();
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
    assert!(
        !o.status.success(),
        "a forged token signed:\n{}",
        combined(&o)
    );
    assert!(!bundle.exists());
    assert_eq!(
        world.fulcio.requests().last().map(String::as_str),
        Some("POST /api/v2/signingCert 400")
    );
    assert_eq!(
        world.rekor.requests().len(),
        2,
        "{:?}",
        world.rekor.requests()
    );
}

/// Every file under `dir` and every output given: none holds the token (nor its signature part,
/// the part that makes it usable). `sync::keyless` judges its runs with it too.
pub(crate) fn token_nowhere(token: &str, dir: &Path, outputs: &[&str]) {
    let signature = token.rsplit('.').next().unwrap();
    for out in outputs {
        assert!(!out.contains(signature), "the token shows in:\n{out}");
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else if path.is_file() {
                let bytes = fs::read(&path).unwrap();
                assert!(
                    !bytes
                        .windows(signature.len())
                        .any(|w| w == signature.as_bytes()),
                    "{} holds the identity token",
                    path.display()
                );
            }
        }
    }
}

fn iso_in(dir: &Path) -> PathBuf {
    let isos: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "iso"))
        .collect();
    let [iso] = isos.as_slice() else {
        panic!("{isos:?}")
    };
    iso.clone()
}

fn bundle_of(iso: &Path) -> PathBuf {
    PathBuf::from(format!("{}.sigstore.json", iso.display()))
}

const RELEASER: &str = "release@cks.example";

#[test]
fn build_sign_writes_a_bundle_sigstore_python_and_verify_accept_and_both_refuse_spoiled_ones() {
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let token = world.oidc().mint(&Claims::email(RELEASER));
    let out_dir = dir.path().join("out");
    let built = build_signed_keyless(&world, dir.path(), &out_dir, &token);
    let (built_out, built_err) = text(&built);
    let iso = iso_in(&out_dir);
    assert_the_bundle_is_published_beside_the_iso(&world, &iso, &built_err);
    let judges = Judges::new(&world, dir.path());
    let (yes, said) = judges.python_accepts(&iso);
    assert!(yes, "sigstore verify refuses cks-iso's bundle:\n{said}");
    assert_verify_names_the_signer_and_matches_the_whole_issuer(&judges, &iso);

    let spoiled = dir.path().join("spoiled");
    fs::create_dir_all(&spoiled).unwrap();
    assert_a_changed_byte_is_refused_by_both(&judges, &iso, &spoiled);
    // The bundle of another ISO (signed by `cks-iso sign`, the token in SIGSTORE_ID_TOKEN).
    let other = spoiled.join("other.iso");
    fs::write(&other, b"another ISO").unwrap();
    let signed = ok(cks_iso()
        .args([
            "sign",
            p(&other),
            "--signing-config",
            p(world.signing_config_path()),
        ])
        .args(["--trusted-root", p(&judges.root)])
        .env("SIGSTORE_ID_TOKEN", &token)
        .output()
        .unwrap());
    let (signed_out, signed_err) = text(&signed);
    assert_eq!(signed_out.trim(), bundle_of(&other).display().to_string());
    let (yes, said) = judges.python_accepts(&other);
    assert!(yes, "{said}");
    let said = assert_another_isos_bundle_is_refused_by_both(&judges, &iso, &other, &spoiled);

    token_nowhere(
        &token,
        dir.path(),
        &[&built_out, &built_err, &signed_out, &signed_err, &said],
    );
}

/// `build --sign` of the world's release into `out_dir` with `token`, through the world's
/// signing configuration.
fn build_signed_keyless(world: &World, dir: &Path, out_dir: &Path, token: &str) -> Output {
    ok(build_in_world(
        world,
        dir,
        &[
            "--kubernetes",
            world.kubernetes(),
            "--network",
            world.network_url(),
            "--dashboard",
            world.dashboard_url(),
            "--output",
            p(out_dir),
            "--sign",
            "--identity-token",
            token,
            "--signing-config",
            p(world.signing_config_path()),
        ],
    ))
}

/// A bundle and no `.sig` beside the ISO, public material readable as the ISO is (0644), the log
/// naming the signer and its issuer (and the trusted root once), and one certificate asked of
/// Fulcio.
fn assert_the_bundle_is_published_beside_the_iso(world: &World, iso: &Path, built_err: &str) {
    let issuer = world.oidc().url();
    assert!(bundle_of(iso).exists(), "{built_err}");
    let roots_named = built_err.matches("trusted root for signatures").count();
    assert_eq!(roots_named, 1, "the root named once:\n{built_err}");
    assert!(!Path::new(&format!("{}.sig", iso.display())).exists());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &fs::metadata(bundle_of(iso)).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o644);
    assert!(
        built_err.contains(&format!(
            "signed {} keyless as {RELEASER} via {issuer}",
            iso.display()
        )),
        "{built_err}"
    );
    assert!(
        world.fulcio().requests() == ["POST /api/v2/signingCert 201"],
        "{:?}",
        world.fulcio().requests()
    );
}

/// The two verifiers of a keyless bundle: the real client's offline verification with the
/// world's root, and cks-iso's own.
struct Judges {
    home: PathBuf,
    trust: PathBuf,
    root: PathBuf,
    issuer: String,
}

impl Judges {
    /// The client trust configuration of `world` written under `dir`.
    fn new(world: &World, dir: &Path) -> Self {
        let config = fs::read_to_string(world.signing_config_path()).unwrap();
        let config: serde_json::Value = serde_json::from_str(&config).unwrap();
        let trust = dir.join("trust_config.json");
        fs::write(
            &trust,
            client_trust_config(&config, world.sigstore().trusted_root()),
        )
        .unwrap();
        Self {
            home: dir.to_owned(),
            trust,
            root: world.trusted_root_path().to_owned(),
            issuer: world.oidc().url().to_owned(),
        }
    }

    /// Whether sigstore-python accepts `iso` with the bundle beside it, and what it said.
    fn python_accepts(&self, iso: &Path) -> (bool, String) {
        let o = sigstore_verifies(
            &self.home,
            &self.trust,
            iso,
            &bundle_of(iso),
            RELEASER,
            &self.issuer,
        );
        (o.status.success(), combined(&o))
    }

    /// `verify --iso-signature` of `iso` for the releaser, the issuer given by `issuer_flag`.
    fn verify_with(&self, iso: &Path, issuer_flag: &str, issuer: &str) -> Output {
        cks_iso()
            .arg("verify")
            .arg(iso)
            .args(["--iso-signature", "--signer-trusted-root", p(&self.root)])
            .args(["--certificate-identity", RELEASER])
            .args([issuer_flag, issuer])
            .output()
            .unwrap()
    }

    /// `verify --iso-signature` of `iso` for the releaser and the world's issuer.
    fn verify(&self, iso: &Path) -> Output {
        self.verify_with(iso, "--certificate-oidc-issuer", &self.issuer)
    }
}

/// cks-iso's own verdict names the signer and when; the issuer as a regexp: the world's issuer (a
/// loopback URL) matches as a whole, a regexp of a part of it does not.
fn assert_verify_names_the_signer_and_matches_the_whole_issuer(judges: &Judges, iso: &Path) {
    let verified = judges.verify(iso);
    let said = combined(&verified);
    assert!(verified.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "signed by {RELEASER} via {}, at 20",
            judges.issuer
        )),
        "{said}"
    );
    let regexp = "--certificate-oidc-issuer-regexp";
    let o = judges.verify_with(iso, regexp, "http://127[.]0[.]0[.]1:[0-9]+(/.*)?");
    assert!(o.status.success(), "{}", combined(&o));
    let o = judges.verify_with(iso, regexp, "http://127[.]0[.]0[.]1");
    assert_eq!(o.status.code(), Some(1), "{}", combined(&o));
}

/// One byte of the ISO changed, its bundle beside it: both refuse.
fn assert_a_changed_byte_is_refused_by_both(judges: &Judges, iso: &Path, spoiled: &Path) {
    let changed = spoiled.join(iso.file_name().unwrap());
    let mut bytes = fs::read(iso).unwrap();
    bytes[40_000] ^= 0x01;
    fs::write(&changed, &bytes).unwrap();
    fs::copy(bundle_of(iso), bundle_of(&changed)).unwrap();
    let (yes, said) = judges.python_accepts(&changed);
    assert!(!yes, "sigstore verify accepts a changed ISO:\n{said}");
    let o = judges.verify(&changed);
    let said = combined(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("its signature is refused"), "{said}");
}

/// A copy of `iso` with `other`'s bundle beside it: both refuse. Returns what verify said.
fn assert_another_isos_bundle_is_refused_by_both(
    judges: &Judges,
    iso: &Path,
    other: &Path,
    spoiled: &Path,
) -> String {
    let copy = spoiled.join("copy.iso");
    fs::copy(iso, &copy).unwrap();
    fs::copy(bundle_of(other), bundle_of(&copy)).unwrap();
    let (yes, said) = judges.python_accepts(&copy);
    assert!(
        !yes,
        "sigstore verify accepts another ISO's bundle:\n{said}"
    );
    let o = judges.verify(&copy);
    let said = combined(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("the file hashes to sha256:"), "{said}");
    said
}

#[test]
fn keyless_signing_refuses_a_forged_or_missing_token_and_writes_nothing() {
    let world = Keyless::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("signing_config.json");
    let services = signing_config(&world.fulcio.url(), &world.rekor.url(), world.oidc.url());
    fs::write(&config, services.to_string()).unwrap();
    let root = dir.path().join("root.json");
    fs::write(&root, world.sigstore.trusted_root()).unwrap();
    let iso = dir.path().join("x.iso");
    fs::write(&iso, b"an ISO").unwrap();
    let sign = |token: Option<&str>| {
        let mut cmd = cks_iso();
        cmd.args(["sign", p(&iso), "--signing-config", p(&config)])
            .args(["--trusted-root", p(&root)])
            .env_remove("SIGSTORE_ID_TOKEN");
        if let Some(token) = token {
            cmd.env("SIGSTORE_ID_TOKEN", token);
        }
        cmd
    };
    let forged = world.oidc.forge(&Claims::email("mallory@cks.example"));
    let said = fails(
        &mut sign(Some(&forged)),
        1,
        &[
            "Fulcio at http://127.0.0.1:",
            "answered HTTP 400: There was an error processing the identity token",
            "hint: Fulcio did not accept the identity token",
        ],
    );
    assert!(!bundle_of(&iso).exists(), "{said}");
    assert!(world.rekor.requests().is_empty());
    token_nowhere(&forged, dir.path(), &[&said]);
    // None at all: a usage error naming the flag and the variable, before any request.
    fails(
        &mut sign(None),
        2,
        &["the following required arguments were not provided"],
    );
    let expired = world.oidc.mint(&Claims {
        lifetime: -60,
        ..Claims::email("late@cks.example")
    });
    fails(
        &mut sign(Some(&expired)),
        2,
        &[
            "the token of late@cks.example expired at 20",
            "hint: pass a fresh OIDC",
        ],
    );
    assert_eq!(world.fulcio.requests().len(), 1);
    // Signed and logged, but the root given names another Sigstore: no bundle is written.
    let stranger = dir.path().join("stranger.json");
    fs::write(&stranger, Sigstore::generate().trusted_root()).unwrap();
    let token = world.oidc.mint(&Claims::email("release@cks.example"));
    let said = fails(
        cks_iso()
            .args(["sign", p(&iso), "--signing-config", p(&config)])
            .args(["--trusted-root", p(&stranger), "--identity-token", &token]),
        1,
        &[
            "does not verify against the trusted root, so no bundle was written",
            "hint: the trusted root",
        ],
    );
    assert!(!bundle_of(&iso).exists(), "{said}");
    token_nowhere(&token, dir.path(), &[&said]);
}

#[test]
fn register_with_an_identity_policy_sends_no_add_for_an_iso_another_identity_signed() {
    use crate::support::cloud::{Cloud, small_iso};
    const OURS: &str = "release@cks.example";
    const THEIRS: &str = "intruder@cks.example";
    let world = Keyless::start();
    let cloud = Cloud::start(cks_iso_testworld::cloudstack::Options::default());
    let dir = cloud.dir.path();
    let config = dir.join("signing_config.json");
    let services = signing_config(&world.fulcio.url(), &world.rekor.url(), world.oidc.url());
    fs::write(&config, services.to_string()).unwrap();
    let root = dir.join("root.json");
    fs::write(&root, world.sigstore.trusted_root()).unwrap();
    let iso = small_iso(dir, "setup-v1.33.1-x86_64.iso", "1.33.1", "amd64", 6);
    let published = cloud.publish(&iso);
    let sign_as = |who: &str| {
        let token = world.oidc.mint(&Claims::email(who));
        ok(cks_iso()
            .args(["sign", p(&published), "--signing-config", p(&config)])
            .args(["--trusted-root", p(&root), "--identity-token", &token])
            .output()
            .unwrap());
    };
    let policy = dir.join("signers.yaml");
    fs::write(
        &policy,
        format!(
            "rules:\n  - match: \"setup-v1.33.*\"\n    certificate-identity: {OURS}\n    \
             certificate-oidc-issuer: {}\n",
            world.oidc.url()
        ),
    )
    .unwrap();
    let flags = [
        "--signer-policy",
        p(&policy),
        "--signer-trusted-root",
        p(&root),
    ];
    let added = |cloud: &Cloud| {
        cloud
            .api
            .commands()
            .contains(&"addKubernetesSupportedVersion".to_owned())
    };

    sign_as(THEIRS);
    let said = fails(
        &mut cloud.register(&[&published], &flags),
        1,
        &[
            p(&published),
            &format!(
                "signer found: a Fulcio certificate for {THEIRS} via {}",
                world.oidc.url()
            ),
            &format!("expected: {OURS} via {}", world.oidc.url()),
            "nothing was registered",
        ],
    );
    assert!(!added(&cloud), "{said}");

    sign_as(OURS);
    let out = ok(cloud.register(&[&published], &flags).output().unwrap());
    let said = combined(&out);
    assert!(
        said.contains(&format!("signed by {OURS} via {}", world.oidc.url())),
        "{said}"
    );
    assert!(added(&cloud), "{said}");
}
