//! What sits beside a signature in an image's referrers, and what a hostile registry lists there:
//! neither fails nor changes the verdict of an image that has a valid signature.
//!
//! registry.k8s.io attaches more than signatures to a promoted digest: the promoter's signed
//! promotion record (kubernetes-sigs/promo-tools PR #1903, a Sigstore bundle referrer with the
//! `https://k8s.io/promo-tools/promotion/v1` predicate), and SBOMs, VEX and provenance the same
//! way or as plain artifacts (testworld `referrers::ReferrerShape`). Each is passed over by its
//! listed type or predicate, or by its statement when the annotation is missing, with one debug
//! line, and never turns `UNSIGNED` into `FAILED`. As cosign skips referrers it cannot fetch, a
//! listed referrer that is gone (404), oversized, or arrives not matching its descriptor is
//! passed over; a Referrers API that answers in pages is read across them (`Link`), and more
//! than the old 32 signature referrers are read.

use std::process::Output;

use crate::signatures::common::build;
use crate::signatures::referrers::{
    PAUSE, TRUST, config_through, json, verify_image, world_without_sig_tags,
};
use crate::support::*;
use cks_iso_testworld::faults::{Fault, FaultProxy, Rule};
use cks_iso_testworld::referrers::{
    DsseOptions, PROMOTION_PREDICATE, ReferrerShape, SPDX_PREDICATE, push_index, push_referrer_as,
};
use cks_iso_testworld::sigstore::SignOptions;
use cks_iso_testworld::world::{Options, World};
use serde_json::Value;

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// Pushes a referrer of `reference`'s top digest shaped `shape`, its layer a bundle signed with
/// `opts` (an SPDX document for a plain SBOM); not listed anywhere yet.
fn attach(world: &World, reference: &str, shape: &ReferrerShape, opts: &DsseOptions) -> Value {
    let image = world.image(reference);
    let layer = match shape.artifact_type.as_str() {
        "application/spdx+json" => {
            br#"{"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT"}"#.to_vec()
        }
        _ => world.sigstore().sign_dsse(&image.digest, opts),
    };
    let host = world.registry_host();
    push_referrer_as(
        &host,
        &image.repository,
        &image.digest,
        &layer,
        shape,
        false,
    )
    .descriptor
}

fn attestation(predicate: &str) -> DsseOptions {
    DsseOptions {
        predicate_type: predicate.into(),
        ..DsseOptions::default()
    }
}

/// Lists `descriptors` as the referrers of `reference`'s top digest (the fallback index).
fn list(world: &World, reference: &str, descriptors: &[Value]) {
    let image = world.image(reference);
    let tag = image.digest.replace(':', "-");
    push_index(&world.registry_host(), &image.repository, &tag, descriptors);
}

/// The proxy answers the Referrers API with `descriptors` (docker-registry has no such API, and
/// refuses to store an index naming a manifest it does not have, as a dangling list does).
fn api_answers(proxy: &FaultProxy, descriptors: &[Value]) {
    let body = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": descriptors,
    }))
    .unwrap();
    proxy.add(Rule::path_contains("/referrers/").fault(Fault::Reply {
        content_type: OCI_INDEX.into(),
        headers: Vec::new(),
        body,
    }));
}

fn passed_over(out: &Output, digest: &str) -> usize {
    stderr(out)
        .lines()
        .filter(|l| l.contains(&format!("referrer {digest} of")) && l.contains("passed over"))
        .count()
}

#[test]
fn dangling_oversized_mismatched_and_attestation_referrers_are_passed_over_beside_a_signature() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let broken = attach_broken_signatures(&world, &proxy);
    let [promotion, bare, spdx, sbom] = attach_attestations(&world);
    let good = attach(
        &world,
        PAUSE,
        &ReferrerShape::signature(),
        &DsseOptions::default(),
    );
    let mut odd = broken;
    odd.extend([promotion.clone(), bare, spdx.clone(), sbom.clone()]);
    let mut listed = odd.clone();
    listed.push(good.clone());
    api_answers(&proxy, &listed);

    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let cache = dir.path().join("cache");
    let done = verify_image(&config, &cache, &["-v", "--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    let entry = &json(&done)["images"][0];
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["found"], "referrer", "{entry:#}");
    assert_eq!(entry["identity"], TRUST, "{entry:#}");
    assert_eq!(entry["signature"]["manifest"], good["digest"], "{entry:#}");
    for d in &odd {
        let digest = d["digest"].as_str().unwrap();
        assert_eq!(
            passed_over(&done, digest),
            1,
            "one debug line for {digest}:\n{}",
            stderr(&done)
        );
    }
    // A plain SBOM and an annotated attestation are known by the list: never fetched.
    for d in [&promotion, &spdx, &sbom] {
        let digest = d["digest"].as_str().unwrap();
        assert!(proxy.requests_to(digest).is_empty(), "{digest} fetched");
    }
}

/// Signature referrers of pause that cannot be taken: gone (a listed digest the registry does
/// not have), listed with another size than a valid signature's, a bundle declared bigger than
/// a bundle may be, and one whose bytes always arrive altered through `proxy`.
fn attach_broken_signatures(world: &World, proxy: &FaultProxy) -> Vec<Value> {
    let signed = DsseOptions::default();
    let mut dangling = attach(world, PAUSE, &ReferrerShape::signature(), &signed);
    dangling["digest"] = format!("sha256:{}", "7".repeat(64)).into();
    let mut resized = attach(world, PAUSE, &ReferrerShape::signature(), &signed);
    resized["size"] = (resized["size"].as_u64().unwrap() + 1).into();
    let oversized = attach(
        world,
        PAUSE,
        &ReferrerShape {
            declared_layer_size: Some(5 << 20),
            ..ReferrerShape::signature()
        },
        &signed,
    );
    let altered = attach(world, PAUSE, &ReferrerShape::signature(), &signed);
    let altered_manifest: Value = {
        let hex = altered["digest"].as_str().unwrap();
        let path = format!("/v2/{}/manifests/{hex}", world.image(PAUSE).repository);
        let got = cks_iso_testworld::http::request(
            &world.registry_host(),
            "GET",
            &path,
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            &[],
        )
        .unwrap();
        serde_json::from_slice(&got.body).unwrap()
    };
    let altered_blob = altered_manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    proxy.add(Rule::path_contains(&altered_blob).fault(Fault::FlipByte { offset: 40 }));
    vec![dangling, resized, oversized, altered]
}

/// Attestations of pause: registry.k8s.io's promotion record with and without its annotation,
/// an SPDX attestation, and a plain SBOM artifact.
fn attach_attestations(world: &World) -> [Value; 4] {
    let promotion = attach(
        world,
        PAUSE,
        &ReferrerShape::attestation(PROMOTION_PREDICATE),
        &attestation(PROMOTION_PREDICATE),
    );
    let bare = attach(
        world,
        PAUSE,
        &ReferrerShape::attestation(PROMOTION_PREDICATE).unannotated(),
        &attestation(PROMOTION_PREDICATE),
    );
    let spdx = attach(
        world,
        PAUSE,
        &ReferrerShape::attestation(SPDX_PREDICATE),
        &attestation(SPDX_PREDICATE),
    );
    let sbom = attach(
        world,
        PAUSE,
        &ReferrerShape::spdx_sbom(),
        &DsseOptions::default(),
    );
    [promotion, bare, spdx, sbom]
}

#[test]
fn an_unannotated_attestation_alone_leaves_an_image_unsigned_not_failed() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let bare = attach(
        &world,
        PAUSE,
        &ReferrerShape::attestation(PROMOTION_PREDICATE).unannotated(),
        &attestation(PROMOTION_PREDICATE),
    );
    list(&world, PAUSE, &[bare]);
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);
    let done = verify_image(&config, &dir.path().join("cache"), &["--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    assert_eq!(json(&done)["images"][0]["verdict"], "unsigned");
}

#[test]
fn the_referrers_api_is_read_across_pages_and_past_32_signature_referrers() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let image = world.image(PAUSE).clone();
    let mallory = DsseOptions {
        sign: SignOptions {
            identity: "mallory@example.com".into(),
            ..SignOptions::default()
        },
        ..DsseOptions::default()
    };
    let foreign = attach(&world, PAUSE, &ReferrerShape::signature(), &mallory);
    let good = attach(
        &world,
        PAUSE,
        &ReferrerShape::signature(),
        &DsseOptions::default(),
    );
    let by_digest = format!("registry.k8s.io/pause@{}", image.digest);

    // Page 1 lists 33 signature referrers of another signer, page 2 the valid one: the old code
    // read page 1 only and 32 referrers of it.
    let page = |manifests: Vec<Value>| {
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests,
        }))
        .unwrap()
    };
    let api = format!("/v2/{}/referrers/{}", image.repository, image.digest);
    let next = format!("{api}?n=33&last=page1");
    proxy.add(Rule::path_contains("last=page1").fault(Fault::Reply {
        content_type: OCI_INDEX.into(),
        headers: Vec::new(),
        body: page(vec![good.clone()]),
    }));
    proxy.add(Rule::path_contains("/referrers/").fault(Fault::Reply {
        content_type: OCI_INDEX.into(),
        headers: vec![("link".into(), format!("<{next}>; rel=\"next\""))],
        body: page(vec![foreign.clone(); 33]),
    }));
    let done = verify_image(&config, &dir.path().join("cache"), &["--json", &by_digest]);
    assert_eq!(done.status.code(), Some(0), "{}", combined(&done));
    let entry = &json(&done)["images"][0];
    assert_eq!(entry["verdict"], "verified", "{entry:#}");
    assert_eq!(entry["signature"]["manifest"], good["digest"], "{entry:#}");
    assert_eq!(proxy.requests_to("last=page1").len(), 1);

    // A `Link` to another host is not followed: the credentials would go with it.
    proxy.clear_rules();
    proxy.clear_log();
    proxy.add(Rule::path_contains("/referrers/").fault(Fault::Reply {
        content_type: OCI_INDEX.into(),
        headers: vec![(
            "link".into(),
            format!("<http://127.0.0.2:9{next}>; rel=\"next\""),
        )],
        body: page(vec![foreign]),
    }));
    let done = verify_image(
        &config,
        &dir.path().join("cache-2"),
        &["--json", &by_digest],
    );
    assert_eq!(done.status.code(), Some(1), "{}", combined(&done));
    assert!(
        stderr(&done).contains("fails the identity check"),
        "{}",
        stderr(&done)
    );
}

#[test]
fn non_signature_referrers_never_fail_slow_or_change_a_build_whose_sig_verifies() {
    const APISERVER: &str = "registry.k8s.io/kube-apiserver:v1.33.1";
    let world = World::start(Options::default());
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let before = ok(build(&world, dir.path(), "before", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap());
    assert!(!stderr(&before).contains("UNSIGNED"), "{}", stderr(&before));

    // registry.k8s.io's shapes beside the `.sig`: a promotion record with and without its
    // annotation, an SPDX attestation, a plain SBOM; listed both in the fallback index and by a
    // Referrers API.
    let signed = DsseOptions::default();
    let listed = vec![
        attach(
            &world,
            APISERVER,
            &ReferrerShape::attestation(PROMOTION_PREDICATE),
            &attestation(PROMOTION_PREDICATE),
        ),
        attach(
            &world,
            APISERVER,
            &ReferrerShape::attestation(PROMOTION_PREDICATE).unannotated(),
            &attestation(PROMOTION_PREDICATE),
        ),
        attach(
            &world,
            APISERVER,
            &ReferrerShape::attestation(SPDX_PREDICATE),
            &attestation(SPDX_PREDICATE),
        ),
        attach(&world, APISERVER, &ReferrerShape::spdx_sbom(), &signed),
    ];
    list(&world, APISERVER, &listed);
    api_answers(&proxy, &listed);
    proxy.clear_log();
    std::fs::remove_dir_all(dir.path().join("cache")).unwrap();
    let after = ok(build(&world, dir.path(), "after", &["--arch", "amd64"])
        .env("CKS_ISO_CONFIG", &config)
        .output()
        .unwrap());
    assert!(!stderr(&after).contains("WARN"), "{}", stderr(&after));
    // Not slowed: a verifying `.sig` means no referrer is asked for.
    let lookups: Vec<String> = proxy
        .log()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| {
            p.contains("/referrers/") || (p.contains("/manifests/sha256-") && !p.ends_with(".sig"))
        })
        .collect();
    assert!(lookups.is_empty(), "{lookups:#?}");
    let iso = |out: &str| {
        std::fs::read(
            dir.path()
                .join(format!("{out}/setup-v{}-x86_64.iso", world.kubernetes())),
        )
        .unwrap()
    };
    assert!(iso("before") == iso("after"), "the same ISO");
}

#[test]
fn a_build_passes_over_a_dangling_referrer_and_its_cache_export_carries_the_rest() {
    let world = world_without_sig_tags(&[PAUSE]);
    let dir = tempfile::tempdir().unwrap();
    let proxy = FaultProxy::start(&world.registry_url());
    let config = config_through(&world, &proxy, dir.path());
    let signed = DsseOptions::default();
    let mut dangling = attach(&world, PAUSE, &ReferrerShape::signature(), &signed);
    dangling["digest"] = format!("sha256:{}", "7".repeat(64)).into();
    let good = attach(&world, PAUSE, &ReferrerShape::signature(), &signed);
    api_answers(&proxy, &[dangling, good.clone()]);
    let lock = dir.path().join("run.lock");
    ok(build(
        &world,
        dir.path(),
        "out",
        &[
            "--arch",
            "amd64",
            "--signatures",
            "enforce",
            "--lock-file",
            p(&lock),
        ],
    )
    .env("CKS_ISO_CONFIG", &config)
    .output()
    .unwrap());
    let locked: Value = serde_json::from_slice(&std::fs::read(&lock).unwrap()).unwrap();
    let pause = locked["arches"]["amd64"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["reference"] == PAUSE)
        .unwrap()
        .clone();
    assert_eq!(pause["signature"]["manifest"], good["digest"]);
    // The dangling referrer was never cached: the carry leaves it out rather than failing.
    let carry = dir.path().join("carry");
    let out = cks_iso()
        .args([
            "cache",
            "export",
            "--cache-dir",
            p(&dir.path().join("cache")),
        ])
        .args(["--locked", p(&lock), "-o", p(&carry)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", combined(&out));
}
