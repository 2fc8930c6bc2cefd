//! Signed files (dl.k8s.io binaries): `.sig`/`.cert` and a Rekor entry with its inclusion
//! proof and checkpoint, as the world's Rekor stand-in serves them, and production material.

use cks_iso_testworld::rekor::{RekorServer, Tamper};
use cks_iso_testworld::sigstore::{K8S_BINARY_IDENTITY, SignOptions, Sigstore};
use sha2::{Digest as _, Sha256};

use crate::now;
use cks_iso_sigstore::rekor::{self, Evidence, checkpoint, inclusion, leaf_hash, verify_file};
use cks_iso_sigstore::verify::Step;
use cks_iso_sigstore::{Policy, TrustedRoot};

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
    let err = verify_file(&root, image_rule, files[0].as_slice(), &evidence[0], now()).unwrap_err();
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
    let digest = cks_iso_oci::image::sha256_of(big(false)).unwrap();
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
    let blob = include_bytes!("../testdata/cosign-v3-blob.txt");
    let bundle = include_bytes!("../testdata/cosign-v3-blob.sigstore.json");
    let ev = Evidence::from_bundle(bundle).unwrap();
    let root = TrustedRoot::from_json(cks_iso_sigstore::PUBLIC_GOOD_ROOT).unwrap();
    let p = &ev.proof;
    let cp = checkpoint(&root, &ev.log_id, &p.checkpoint).unwrap();
    assert_eq!(
        (cp.size, cp.root.clone()),
        (p.tree_size, p.root_hash.clone())
    );
    assert!(cp.origin.starts_with("rekor.sigstore.dev - "));
    let rule = cks_iso_sigstore::Rule::exact(
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
