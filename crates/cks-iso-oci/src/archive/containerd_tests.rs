//! Archives in the shapes builders write them and in the shapes that broke nodes, judged as
//! containerd's import judges them (`tests/it/verify/foreign_iso.rs` holds the verdicts against a real
//! `ctr import`).

use super::*;

/// A tar of `(path, bytes)` regular files, in order.
fn tar_of(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut h, path, data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap()
}

/// One small image for `arch`: (layer, config, manifest) bytes.
struct Parts {
    layer: Vec<u8>,
    config: Vec<u8>,
    manifest: Vec<u8>,
}

fn parts(arch: &str) -> Parts {
    let layer = b"layer bytes of a pause image".to_vec();
    let config = format!(
        r#"{{"architecture":"{arch}","os":"linux","rootfs":{{"type":"layers","diff_ids":["{}"]}}}}"#,
        Digest::of(&layer)
    )
    .into_bytes();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{}","size":{}}}]}}"#,
        Digest::of(&config),
        config.len(),
        Digest::of(&layer),
        layer.len()
    )
    .into_bytes();
    Parts {
        layer,
        config,
        manifest,
    }
}

fn blob(bytes: &[u8]) -> String {
    format!("blobs/sha256/{}", Digest::of(bytes).hex())
}

fn index_json(manifest: &[u8], annotations: &str) -> Vec<u8> {
    format!(
        r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":{},"annotations":{{{annotations}}}}}]}}"#,
        Digest::of(manifest),
        manifest.len()
    )
    .into_bytes()
}

const NAMED: &str = r#""io.containerd.image.name":"registry.k8s.io/pause:3.10.1","org.opencontainers.image.ref.name":"3.10.1""#;

/// What `ctr images export` writes: the layout, `index.json`, the blobs.
fn oci_archive(p: &Parts, annotations: &str, skip: Option<&[u8]>) -> Vec<u8> {
    let mut files = vec![
        ("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
        ("index.json", index_json(&p.manifest, annotations)),
    ];
    let blobs = [&p.manifest, &p.config, &p.layer];
    let paths: Vec<String> = blobs.iter().map(|b| blob(b)).collect();
    for (bytes, path) in blobs.iter().zip(&paths) {
        if skip != Some(bytes.as_slice()) {
            files.push((path.as_str(), bytes.to_vec()));
        }
    }
    tar_of(&files)
}

#[test]
fn an_oci_layout_imports_under_its_containerd_name() {
    let p = parts("amd64");
    let got = import(oci_archive(&p, NAMED, None).as_slice(), Some(Arch::Amd64)).unwrap();
    assert_eq!(got.format, Format::Oci);
    assert_eq!(got.names, ["registry.k8s.io/pause:3.10.1"]);
    // A bare tag as the only name gets ctr's import prefix, as ctr does without --base-name.
    let tag_only = r#""org.opencontainers.image.ref.name":"3.10.1""#;
    let got = import(oci_archive(&p, tag_only, None).as_slice(), None).unwrap();
    assert_eq!(got.names, ["import-<date>:3.10.1"]);
}

#[test]
fn blobs_alone_are_an_unrecognized_image_format() {
    // apache/cloudstack#13157: the official ISO's docker/pause:3.10.1.tar held only blobs/.
    let p = parts("amd64");
    let files: Vec<(String, Vec<u8>)> = [&p.manifest, &p.config, &p.layer]
        .iter()
        .map(|b| (blob(b), b.to_vec()))
        .collect();
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
    let err = import(tar_of(&files).as_slice(), Some(Arch::Amd64)).unwrap_err();
    assert_eq!(err.containerd.as_deref(), Some("unrecognized image format"));
    assert_eq!(
        err.to_string(),
        "fails with \"unrecognized image format\": it holds only blobs/ (3 file(s)): no \
         oci-layout, no index.json and no manifest.json"
    );
}

#[test]
fn each_way_an_oci_layout_breaks_reads_as_containerd_says_it() {
    let p = parts("amd64");
    let no_index = tar_of(&[("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec())]);
    let err = import(no_index.as_slice(), None).unwrap_err();
    assert_eq!(
        err.containerd.as_deref(),
        Some("missing index.json in OCI layout 1.0.0")
    );
    let err = import(oci_archive(&p, NAMED, Some(&p.layer)).as_slice(), None).unwrap_err();
    assert_eq!(
        err.containerd,
        Some(format!(
            "content digest {}: not found",
            Digest::of(&p.layer)
        ))
    );
    let err = import(oci_archive(&p, NAMED, Some(&p.manifest)).as_slice(), None).unwrap_err();
    assert!(err.cause.contains("the manifest"), "{err}");
    // A corrupt copy: the name's digest is not the bytes', so containerd finds no such content.
    let mut files = vec![
        ("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
        ("index.json", index_json(&p.manifest, NAMED)),
    ];
    let (m, c, l) = (blob(&p.manifest), blob(&p.config), blob(&p.layer));
    files.push((m.as_str(), p.manifest.clone()));
    files.push((c.as_str(), p.config.clone()));
    files.push((l.as_str(), b"flipped".to_vec()));
    let err = import(tar_of(&files).as_slice(), None).unwrap_err();
    assert!(err.cause.contains("holds other bytes"), "{err}");
    // Another platform's image: the unpack finds no match.
    let arm = parts("arm64");
    let err = import(oci_archive(&arm, NAMED, None).as_slice(), Some(Arch::Amd64)).unwrap_err();
    assert!(
        err.containerd
            .as_deref()
            .is_some_and(|c| c.contains("no match for platform")),
        "{err}"
    );
    // No name: the import succeeds and records nothing.
    let err = import(oci_archive(&p, "", None).as_slice(), None).unwrap_err();
    assert_eq!(err.containerd, None);
    assert!(
        err.to_string().starts_with("succeeds but records no image"),
        "{err}"
    );
    let err = import(
        tar_of(&[("oci-layout", br#"{"imageLayoutVersion":"2.0.0"}"#.to_vec())]).as_slice(),
        None,
    )
    .unwrap_err();
    assert_eq!(
        err.containerd.as_deref(),
        Some("unsupported OCI version 2.0.0")
    );
}

#[test]
fn a_docker_archive_imports_by_paths_and_tags() {
    // `docker save` before Docker 25: `<hex>.json` config, `<id>/layer.tar`, manifest.json.
    let p = parts("arm64");
    let manifest =
        br#"[{"Config":"cfg.json","RepoTags":["pause:3.10"],"Layers":["abc/layer.tar"]}]"#;
    let files = [
        ("manifest.json", manifest.to_vec()),
        ("cfg.json", p.config.clone()),
        ("abc/layer.tar", p.layer.clone()),
    ];
    let got = import(tar_of(&files).as_slice(), Some(Arch::Arm64)).unwrap();
    assert_eq!(got.format, Format::Docker);
    assert_eq!(got.names, ["docker.io/library/pause:3.10"]);
    let err = import(tar_of(&files[..2]).as_slice(), None).unwrap_err();
    assert_eq!(
        err.containerd.as_deref(),
        Some("failed to resolve layers: layer \"abc/layer.tar\" not found")
    );
    let err = import(
        tar_of(&[files[0].clone(), files[2].clone()]).as_slice(),
        None,
    )
    .unwrap_err();
    assert_eq!(
        err.containerd.as_deref(),
        Some("image config \"cfg.json\" not found")
    );
    let err = import(tar_of(&files).as_slice(), Some(Arch::Amd64)).unwrap_err();
    assert!(err.cause.contains("linux/arm64"), "{err}");
}

#[test]
fn with_the_platform_unknown_one_whole_platform_of_an_index_will_do() {
    // A multi-arch index of which the archive holds only the amd64 image, as `ctr images export
    // --platform` and cks-iso write it.
    let p = parts("amd64");
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{}","size":9,"platform":{{"architecture":"arm64","os":"linux"}}}},{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{}","size":{},"platform":{{"architecture":"amd64","os":"linux"}}}}]}}"#,
        "ab".repeat(32),
        Digest::of(&p.manifest),
        p.manifest.len()
    )
    .into_bytes();
    let top = format!(
        r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{}","size":{},"annotations":{{{NAMED}}}}}]}}"#,
        Digest::of(&index),
        index.len()
    )
    .into_bytes();
    let paths = [
        blob(&index),
        blob(&p.manifest),
        blob(&p.config),
        blob(&p.layer),
    ];
    let mut files = vec![
        ("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
        ("index.json", top),
    ];
    for (path, bytes) in paths.iter().zip([&index, &p.manifest, &p.config, &p.layer]) {
        files.push((path.as_str(), bytes.to_vec()));
    }
    let archive = tar_of(&files);
    assert!(import(archive.as_slice(), None).is_ok());
    assert!(import(archive.as_slice(), Some(Arch::Amd64)).is_ok());
    let err = import(archive.as_slice(), Some(Arch::Arm64)).unwrap_err();
    assert!(
        err.containerd
            .as_deref()
            .is_some_and(|c| c.contains("not found")),
        "{err}"
    );
}
