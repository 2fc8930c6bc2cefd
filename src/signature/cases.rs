//! Each check of [`super::verify::layer`] against signatures the test world's Sigstore makes,
//! good and spoiled one way at a time: every spoiled one must fail at its own step.

use cks_iso_testworld::sigstore::{IssuerForm, SignOptions, SignedLayer, Sigstore};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::verify::{Blob, Step, layer};
use super::{ANN_BUNDLE, ANN_CERTIFICATE, ANN_CHAIN, ANN_SIGNATURE, Policy, TrustedRoot};

const REPO: &str = "registry.k8s.io/pause";
const SIGNED: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn digest_of(payload: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(payload)))
}

fn check_with(root: &TrustedRoot, l: &SignedLayer, digest: &str, at: i64) -> Result<(), Step> {
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    layer(root, &rule, SIGNED, digest, &l.annotations, &l.payload, at)
        .map(|_| ())
        .map_err(|f| f.step)
}

fn check(store: &Sigstore, l: &SignedLayer) -> Result<(), Step> {
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    check_with(&root, l, &digest_of(&l.payload), now())
}

fn signed(store: &Sigstore, opts: SignOptions) -> SignedLayer {
    store.sign(REPO, SIGNED, &opts)
}

#[test]
fn a_good_signature_verifies_and_says_who_signed() {
    let store = Sigstore::generate();
    let l = signed(&store, SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let v = layer(
        &root,
        &rule,
        SIGNED,
        &digest_of(&l.payload),
        &l.annotations,
        &l.payload,
        now(),
    )
    .unwrap();
    assert_eq!(v.identity, super::K8S_IMAGE_IDENTITY);
    assert_eq!(v.issuer, super::GOOGLE_ISSUER);
    assert_eq!(v.docker_reference, REPO);
    // The issuer in either extension form alone is accepted.
    for form in [IssuerForm::V1, IssuerForm::V2] {
        let opts = SignOptions {
            issuer_form: form,
            ..SignOptions::default()
        };
        assert_eq!(check(&store, &signed(&store, opts)), Ok(()));
    }
}

#[test]
fn each_spoiled_signature_fails_at_its_own_step() {
    let store = Sigstore::generate();
    let cases = [
        (
            SignOptions {
                identity: "mallory@example.com".into(),
                ..SignOptions::default()
            },
            Step::Identity,
        ),
        (
            SignOptions {
                issuer: "https://evil.example".into(),
                ..SignOptions::default()
            },
            Step::Issuer,
        ),
        (
            SignOptions {
                issuer: "https://evil.example".into(),
                issuer_form: IssuerForm::V1,
                ..SignOptions::default()
            },
            Step::Issuer,
        ),
        (
            SignOptions {
                rogue_ca: true,
                ..SignOptions::default()
            },
            Step::CertificateChain,
        ),
        (
            SignOptions {
                flip_set: true,
                ..SignOptions::default()
            },
            Step::RekorSet,
        ),
        (
            SignOptions {
                payload_digest: Some(OTHER.into()),
                ..SignOptions::default()
            },
            Step::Binding,
        ),
        (
            SignOptions {
                integrated_after: 3600,
                ..SignOptions::default()
            },
            Step::Time,
        ),
    ];
    for (opts, step) in cases {
        let what = format!("{opts:?}");
        assert_eq!(check(&store, &signed(&store, opts)), Err(step), "{what}");
    }
}

fn annotated(l: &SignedLayer, name: &str, value: String) -> SignedLayer {
    let mut out = l.clone();
    out.annotations.insert(name.to_owned(), value);
    out
}

#[test]
fn swapped_or_altered_material_fails() {
    let store = Sigstore::generate();
    let good = signed(&store, SignOptions::default());
    let other = signed(&store, SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    // The payload is not what its descriptor names.
    assert_eq!(
        check_with(&root, &good, OTHER, now()),
        Err(Step::LayerIntegrity)
    );
    // Another valid signature or certificate than the one Rekor logged.
    let sig = annotated(
        &good,
        ANN_SIGNATURE,
        other.annotations[ANN_SIGNATURE].clone(),
    );
    assert_eq!(check(&store, &sig), Err(Step::RekorEntry));
    let cert = annotated(
        &good,
        ANN_CERTIFICATE,
        other.annotations[ANN_CERTIFICATE].clone(),
    );
    assert_eq!(check(&store, &cert), Err(Step::RekorEntry));
    // Another entry's bundle: its SET is valid, its entry is for another payload.
    let bundle = annotated(&good, ANN_BUNDLE, other.annotations[ANN_BUNDLE].clone());
    assert_eq!(check(&store, &bundle), Err(Step::RekorEntry));
    // Another payload under its own digest: Rekor logged a different hash.
    let mut payload = good.clone();
    payload.payload.push(b' ');
    assert_eq!(check(&store, &payload), Err(Step::RekorEntry));
    // Missing annotation.
    let mut bare = good.clone();
    bare.annotations.remove(ANN_BUNDLE);
    assert_eq!(check(&store, &bare), Err(Step::LayerIntegrity));
    // An entry integrated in the future of the verifier's clock.
    let digest = digest_of(&good.payload);
    assert_eq!(
        check_with(&root, &good, &digest, now() - 3600),
        Err(Step::Time)
    );
}

#[test]
fn the_chain_annotation_is_never_trusted() {
    let store = Sigstore::generate();
    let rogue = signed(
        &store,
        SignOptions {
            rogue_ca: true,
            ..SignOptions::default()
        },
    );
    let good = signed(&store, SignOptions::default());
    // A rogue leaf shipped with the trusted chain is still rogue…
    let dressed = annotated(&rogue, ANN_CHAIN, good.annotations[ANN_CHAIN].clone());
    assert_eq!(check(&store, &dressed), Err(Step::CertificateChain));
    // …and a good leaf shipped with garbage as its chain is still good.
    let undressed = annotated(&good, ANN_CHAIN, "not a chain".into());
    assert_eq!(check(&store, &undressed), Ok(()));
}

/// The world's root with one log's id replaced.
fn root_without(store: &Sigstore, list: &str) -> TrustedRoot {
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json[list][0]["logId"]["keyId"] =
        Value::String("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into());
    TrustedRoot::from_json(&json.to_string()).unwrap()
}

#[test]
fn logs_outside_the_root_are_refused() {
    let store = Sigstore::generate();
    let l = signed(&store, SignOptions::default());
    let digest = digest_of(&l.payload);
    let no_ct = root_without(&store, "ctlogs");
    assert_eq!(check_with(&no_ct, &l, &digest, now()), Err(Step::Sct));
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json["ctlogs"][0]["publicKey"]["validFor"]["end"] =
        Value::String("2021-06-01T00:00:00Z".into());
    let retired = TrustedRoot::from_json(&json.to_string()).unwrap();
    assert_eq!(check_with(&retired, &l, &digest, now()), Err(Step::Sct));
    let mut json: Value = serde_json::from_str(store.trusted_root()).unwrap();
    json["tlogs"][0]["publicKey"]["validFor"]["end"] = Value::String("2021-06-01T00:00:00Z".into());
    let retired = TrustedRoot::from_json(&json.to_string()).unwrap();
    assert_eq!(
        check_with(&retired, &l, &digest, now()),
        Err(Step::RekorSet)
    );
    let no_rekor = root_without(&store, "tlogs");
    assert_eq!(
        check_with(&no_rekor, &l, &digest, now()),
        Err(Step::RekorSet)
    );
    // Another world's root trusts none of it.
    let elsewhere = TrustedRoot::from_json(Sigstore::generate().trusted_root()).unwrap();
    assert_eq!(
        check_with(&elsewhere, &l, &digest, now()),
        Err(Step::RekorSet)
    );
}

#[test]
fn a_tampered_sct_fails() {
    let store = Sigstore::generate();
    let l = signed(
        &store,
        SignOptions {
            spoil_sct: true,
            ..SignOptions::default()
        },
    );
    assert_eq!(check(&store, &l), Err(Step::Sct));
}

fn manifest(signs: &str, layers: &[&SignedLayer]) -> super::SignatureManifest {
    use crate::image::{Descriptor, Digest};
    super::SignatureManifest {
        signs: Digest::parse(signs).unwrap(),
        digest: Digest::of(b"manifest"),
        bytes: b"manifest".to_vec(),
        layers: layers
            .iter()
            .map(|l| {
                let desc = Descriptor {
                    media_type: super::SIMPLE_SIGNING.into(),
                    digest: Digest::parse(&digest_of(&l.payload)).unwrap(),
                    size: l.payload.len() as u64,
                    platform: None,
                    annotations: l.annotations.clone(),
                };
                (desc, l.payload.clone())
            })
            .collect(),
    }
}

#[test]
fn any_layer_that_verifies_accepts_and_otherwise_the_first_failure_is_named() {
    // kpromo copies the staging signature, then appends its own: two layers, one manifest.
    let store = Sigstore::generate();
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let staging = signed(
        &store,
        SignOptions {
            identity: "krel-staging@k8s-releng-prod.iam.gserviceaccount.com".into(),
            ..SignOptions::default()
        },
    );
    let trust = signed(&store, SignOptions::default());
    let both = manifest(SIGNED, &[&staging, &trust]);
    let (signed_digest, _, v) = super::judge(&root, &rule, REPO, &[both], now())
        .unwrap()
        .unwrap();
    assert_eq!(signed_digest.to_string(), SIGNED);
    assert_eq!(v.identity, super::K8S_IMAGE_IDENTITY);
    let only_staging = manifest(SIGNED, &[&staging]);
    let err = super::judge(&root, &rule, REPO, &[only_staging], now()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("identity check") && text.contains("krel-staging"),
        "{text}"
    );
    // A manifest without layers is malformed, never "unsigned".
    let empty = manifest(SIGNED, &[]);
    assert!(super::judge(&root, &rule, REPO, &[empty], now()).is_err());
    assert!(
        super::judge(&root, &rule, REPO, &[], now())
            .unwrap()
            .is_none()
    );
}

/// A real public-good signature (see `testdata/README.md`): cosign's annotations rebuilt from
/// its bundle, judged against the embedded root. Checks 1 to 8 pass on production material:
/// the P-384 Fulcio chain, the CT log's SCT, Rekor's SET over its entry, the signature, the time,
/// identity and issuer.
#[test]
fn production_material_verifies_under_the_embedded_root() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let blob = include_bytes!("testdata/cosign-v3-blob.txt");
    let bundle: Value =
        serde_json::from_str(include_str!("testdata/cosign-v3-blob.sigstore.json")).unwrap();
    let vm = &bundle["verificationMaterial"];
    let entry = &vm["tlogEntries"][0];
    let cert = b64
        .decode(vm["certificate"]["rawBytes"].as_str().unwrap())
        .unwrap();
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        b64.encode(&cert)
    );
    let log_id = b64
        .decode(entry["logId"]["keyId"].as_str().unwrap())
        .unwrap();
    let rekor = serde_json::json!({
        "SignedEntryTimestamp": entry["inclusionPromise"]["signedEntryTimestamp"],
        "Payload": {
            "body": entry["canonicalizedBody"],
            "integratedTime": entry["integratedTime"].as_str().unwrap().parse::<i64>().unwrap(),
            "logID": hex::encode(log_id),
            "logIndex": entry["logIndex"].as_str().unwrap().parse::<i64>().unwrap(),
        },
    });
    let annotations = std::collections::BTreeMap::from([
        (
            ANN_SIGNATURE.to_owned(),
            bundle["messageSignature"]["signature"]
                .as_str()
                .unwrap()
                .to_owned(),
        ),
        (ANN_CERTIFICATE.to_owned(), pem),
        (ANN_BUNDLE.to_owned(), rekor.to_string()),
    ]);
    let root = TrustedRoot::from_json(super::PUBLIC_GOOD_ROOT).unwrap();
    let rule = super::Rule::exact(
        "**",
        "w.vollprecht@gmail.com",
        "https://github.com/login/oauth",
    );
    let digest = digest_of(blob);
    let under = |root: &TrustedRoot| {
        super::verify::blob(root, &rule, &digest, &annotations, Blob::Bytes(blob), now())
    };
    let v = under(&root).unwrap();
    assert_eq!(v.log_index, 738_312_748);
    // The same material under the test world's root, or for another signer, fails.
    let world = TrustedRoot::from_json(Sigstore::generate().trusted_root()).unwrap();
    let err = under(&world).unwrap_err();
    assert_eq!(err.step, Step::RekorSet);
    let k8s = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let err = super::verify::blob(&root, &k8s, &digest, &annotations, Blob::Bytes(blob), now())
        .unwrap_err();
    assert_eq!(err.step, Step::Identity);
    // And one flipped byte of the blob breaks it.
    let mut other = blob.to_vec();
    other[0] ^= 1;
    let err = super::verify::blob(
        &root,
        &rule,
        &digest_of(&other),
        &annotations,
        Blob::Bytes(&other),
        now(),
    )
    .unwrap_err();
    assert_eq!(err.step, Step::RekorEntry);
}

#[test]
fn a_backing_registry_docker_reference_is_recorded_not_trusted() {
    // Before kpromo 4.0.2 the payload named the backing registry, not registry.k8s.io.
    let store = Sigstore::generate();
    let backing = "europe-west1-docker.pkg.dev/k8s-artifacts-prod/images/pause";
    let l = store.sign(backing, SIGNED, &SignOptions::default());
    let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
    let rule = Policy::builtin()
        .rule_for("registry.k8s.io/pause")
        .unwrap()
        .clone();
    let v = layer(
        &root,
        &rule,
        SIGNED,
        &digest_of(&l.payload),
        &l.annotations,
        &l.payload,
        now(),
    )
    .unwrap();
    assert_eq!(v.docker_reference, backing);
}

mod binaries {
    //! Signed files (dl.k8s.io binaries): `.sig`/`.cert` and a Rekor entry with its inclusion
    //! proof and checkpoint, as the world's Rekor stand-in serves them, and production material.

    use cks_iso_testworld::rekor::{RekorServer, Tamper};
    use cks_iso_testworld::sigstore::{K8S_BINARY_IDENTITY, SignOptions, Sigstore};
    use sha2::{Digest as _, Sha256};

    use super::super::rekor::{self, Evidence, checkpoint, inclusion, leaf_hash, verify_file};
    use super::super::verify::Step;
    use super::super::{Policy, TrustedRoot};
    use super::now;

    const URL: &str = "https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm";

    fn signer() -> SignOptions {
        SignOptions {
            identity: K8S_BINARY_IDENTITY.into(),
            ..SignOptions::default()
        }
    }

    /// Signs `files` into a fresh log and returns the evidence of each, as cks-iso would build
    /// it from Rekor's replies (fetched with a blocking client).
    fn logged(
        store: &Sigstore,
        rekor: &RekorServer,
        files: &[&[u8]],
        opts: &SignOptions,
    ) -> Vec<Evidence> {
        let mut signed = Vec::new();
        for file in files {
            let blob = store.sign_blob(file, rekor.next_index(), None, opts);
            let (sig, cert) = (blob.sig.clone(), blob.cert.clone());
            let uuid = rekor.add(store, blob, &hex::encode(Sha256::digest(file)));
            signed.push((file.to_vec(), sig, cert, uuid));
        }
        signed
            .into_iter()
            .map(|(file, sig, cert, uuid)| {
                let reply = http_get(&format!("{}/api/v1/log/entries/{uuid}", rekor.url()));
                let map = rekor::entries(&reply).unwrap();
                let entry = &map[&uuid];
                let digest = Sha256::digest(&file);
                assert!(Evidence::logged_by(&digest, &sig, &cert, entry));
                Evidence::from_rekor(&digest, &sig, &cert, entry).unwrap()
            })
            .collect()
    }

    fn http_get(url: &str) -> Vec<u8> {
        let (host, path) = url
            .strip_prefix("http://")
            .unwrap()
            .split_once('/')
            .unwrap();
        let mut stream = std::net::TcpStream::connect(host).unwrap();
        use std::io::{Read, Write};
        write!(
            stream,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = Vec::new();
        stream.read_to_end(&mut out).unwrap();
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        out[split + 4..].to_vec()
    }

    fn check(root: &TrustedRoot, file: &[u8], ev: &Evidence) -> Result<(), Step> {
        let policy = Policy::builtin();
        let rule = policy.rule_for_url(URL).unwrap();
        verify_file(root, rule, file, ev, now())
            .map(|_| ())
            .map_err(|f| f.step)
    }

    #[test]
    fn every_entry_of_a_log_verifies_with_its_proof_and_checkpoint() {
        let store = Sigstore::generate();
        let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
        let rekor = RekorServer::start();
        let files: Vec<Vec<u8>> = (0..7u8).map(|i| vec![i; 100 + i as usize]).collect();
        let refs: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
        let evidence = logged(&store, &rekor, &refs, &signer());
        for (file, ev) in files.iter().zip(&evidence) {
            assert_eq!(check(&root, file, ev), Ok(()));
            // The bundle round-trips, byte-identically.
            let bundle = ev.bundle();
            let back = Evidence::from_bundle(&bundle).unwrap();
            assert_eq!(&back, ev);
            assert_eq!(back.bundle(), bundle);
        }
        // Another file, the wrong identity, a flipped SET fail at their steps.
        assert_eq!(
            check(&root, b"other", &evidence[0]),
            Err(Step::LayerIntegrity)
        );
        let k8s_images = Policy::builtin();
        let image_rule = k8s_images.rule_for("registry.k8s.io/pause").unwrap();
        let err =
            verify_file(&root, image_rule, files[0].as_slice(), &evidence[0], now()).unwrap_err();
        assert_eq!(err.step, Step::Identity);
        let flipped = SignOptions {
            flip_set: true,
            ..signer()
        };
        let ev = logged(&store, &rekor, &[b"flipped".as_slice()], &flipped);
        assert_eq!(check(&root, b"flipped", &ev[0]), Err(Step::RekorSet));
    }

    #[test]
    fn a_spoiled_proof_or_checkpoint_fails_at_its_own_step() {
        let store = Sigstore::generate();
        let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
        let rekor = RekorServer::start();
        let file = b"kubeadm".as_slice();
        let good = logged(&store, &rekor, &[file, b"b", b"c"], &signer()).remove(0);
        assert_eq!(check(&root, file, &good), Ok(()));

        let mut ev = good.clone();
        ev.proof.hashes[0][0] ^= 1;
        assert_eq!(check(&root, file, &ev), Err(Step::InclusionProof));
        let mut ev = good.clone();
        ev.proof.hashes.pop();
        assert_eq!(check(&root, file, &ev), Err(Step::InclusionProof));
        let mut ev = good.clone();
        ev.proof.log_index = 1;
        assert_eq!(check(&root, file, &ev), Err(Step::InclusionProof));
        // A root and proof for another tree, the checkpoint unchanged.
        let mut ev = good.clone();
        ev.proof.tree_size += 1;
        assert!(check(&root, file, &ev).is_err());
        let mut ev = good.clone();
        ev.proof.checkpoint = ev.proof.checkpoint.replacen('\n', "0\n", 2);
        assert_eq!(check(&root, file, &ev), Err(Step::Checkpoint));
        let mut ev = good.clone();
        ev.proof.checkpoint = ev.proof.checkpoint.replace("\u{2014} ", "- ");
        assert_eq!(check(&root, file, &ev), Err(Step::Checkpoint));
        // Signed by a key outside the root.
        let other = Sigstore::generate();
        let mut ev = good.clone();
        ev.proof.checkpoint = other.checkpoint(ev.proof.tree_size as u64, &ev.proof.root_hash);
        assert_eq!(check(&root, file, &ev), Err(Step::Checkpoint));

        // The stand-in's own tampering is caught the same way.
        rekor.tamper(Tamper::ProofHash);
        let ev = logged(&store, &rekor, &[b"d".as_slice()], &signer()).remove(0);
        assert_eq!(check(&root, b"d", &ev), Err(Step::InclusionProof));
        rekor.tamper(Tamper::Checkpoint);
        let ev = logged(&store, &rekor, &[b"e".as_slice()], &signer()).remove(0);
        assert_eq!(check(&root, b"e", &ev), Err(Step::Checkpoint));
    }

    /// A file of `left` bytes made as it is read (a 64 KiB pattern over and over, with `tweak`
    /// flipping its last byte): never held anywhere. Records the largest read asked of it.
    struct Generated {
        pattern: Vec<u8>,
        at: usize,
        left: u64,
        tweak: bool,
        largest: usize,
    }

    impl std::io::Read for Generated {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.largest = self.largest.max(buf.len());
            let rest = &self.pattern[self.at..];
            let n = buf.len().min(rest.len()).min(self.left as usize);
            buf[..n].copy_from_slice(&rest[..n]);
            self.at = (self.at + n) % self.pattern.len();
            self.left -= n as u64;
            if self.left == 0 && self.tweak && n > 0 {
                buf[n - 1] ^= 1;
            }
            Ok(n)
        }
    }

    #[test]
    fn a_256_mib_file_verifies_as_it_streams_never_held() {
        const SIZE: u64 = 256 << 20;
        let big = |tweak| Generated {
            pattern: (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect(),
            at: 0,
            left: SIZE,
            tweak,
            largest: 0,
        };
        // The world signs the file by its digest (it is never held, not even to sign it).
        let digest = crate::image::sha256_of(big(false)).unwrap();
        let store = Sigstore::generate();
        let root = TrustedRoot::from_json(store.trusted_root()).unwrap();
        let rekor = RekorServer::start();
        let blob = store.sign_blob_digest(&digest, rekor.next_index(), &signer());
        let (sig, cert) = (blob.sig.clone(), blob.cert.clone());
        let uuid = rekor.add(&store, blob, &hex::encode(digest));
        let reply = http_get(&format!("{}/api/v1/log/entries/{uuid}", rekor.url()));
        let ev = Evidence::from_rekor(
            &digest,
            &sig,
            &cert,
            &rekor::entries(&reply).unwrap()[&uuid],
        )
        .unwrap();
        let policy = Policy::builtin();
        let rule = policy.rule_for_url(URL).unwrap();
        // Every byte passes through a small buffer, once.
        let mut file = big(false);
        let v = verify_file(&root, rule, &mut file, &ev, now()).unwrap();
        assert_eq!(v.log_index, ev.log_index);
        assert_eq!(file.left, 0);
        assert!(
            file.largest <= 64 * 1024,
            "read {} bytes at once",
            file.largest
        );
        // One other byte, at the very end, and it fails.
        let err = verify_file(&root, rule, big(true), &ev, now()).unwrap_err();
        assert_eq!(err.step, Step::LayerIntegrity);
        // A reader that breaks fails too, saying so.
        struct Broken;
        impl std::io::Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let err = verify_file(&root, rule, Broken, &ev, now()).unwrap_err();
        assert_eq!(err.step, Step::LayerIntegrity);
        assert!(err.reason.contains("disk on fire"), "{}", err.reason);
    }

    #[test]
    fn inclusion_edge_cases() {
        let leaf = leaf_hash(b"x");
        // A tree of one: the leaf is the root, the path empty.
        assert!(inclusion(0, 1, leaf, &[], &leaf).is_ok());
        assert!(inclusion(1, 1, leaf, &[], &leaf).is_err());
        assert!(inclusion(0, 1, leaf, &[leaf.to_vec()], &leaf).is_err());
        assert!(inclusion(-1, 1, leaf, &[], &leaf).is_err());
        let other = leaf_hash(b"y");
        let root = rekor::node_hash(&leaf, &other);
        assert!(inclusion(0, 2, leaf, &[other.to_vec()], &root).is_ok());
        assert!(inclusion(1, 2, other, &[leaf.to_vec()], &root).is_ok());
        assert!(inclusion(1, 2, leaf, &[other.to_vec()], &root).is_err());
    }

    /// The production bundle's inclusion proof and checkpoint (Rekor v1, public-good root).
    #[test]
    fn production_proof_and_checkpoint_verify_under_the_embedded_root() {
        let blob = include_bytes!("testdata/cosign-v3-blob.txt");
        let bundle = include_bytes!("testdata/cosign-v3-blob.sigstore.json");
        let ev = Evidence::from_bundle(bundle).unwrap();
        let root = TrustedRoot::from_json(super::super::PUBLIC_GOOD_ROOT).unwrap();
        let p = &ev.proof;
        let cp = checkpoint(&root, &ev.log_id, &p.checkpoint).unwrap();
        assert_eq!(
            (cp.size, cp.root.clone()),
            (p.tree_size, p.root_hash.clone())
        );
        assert!(cp.origin.starts_with("rekor.sigstore.dev - "));
        let rule = super::super::Rule::exact(
            "**",
            "w.vollprecht@gmail.com",
            "https://github.com/login/oauth",
        );
        // Every check, the inclusion proof up to the checkpoint's root included.
        verify_file(&root, &rule, &blob[..], &ev, now()).unwrap();
        let mut spoiled = ev.clone();
        spoiled.proof.hashes[3][7] ^= 1;
        let err = verify_file(&root, &rule, &blob[..], &spoiled, now()).unwrap_err();
        assert_eq!(err.step, Step::InclusionProof);
        // The world's root knows neither the log nor its checkpoint key.
        let world = TrustedRoot::from_json(Sigstore::generate().trusted_root()).unwrap();
        assert!(checkpoint(&world, &ev.log_id, &p.checkpoint).is_err());
    }
}
