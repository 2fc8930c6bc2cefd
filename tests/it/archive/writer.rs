//! The archive writer on the synthetic world, judged by reading the tar back: layout, fixed
//! headers, determinism, platform choice, and refusal of corrupt blobs. No external tools.

use std::io::Read;
use std::path::Path;

use crate::support::world::{World, world};
use cks_iso::archive::{self, ArchiveError};
use cks_iso::cache::Cache;
use cks_iso::image::{Arch, Digest, Image, ImageError, MediaType, Reference};
use serde_json::Value;

const APISERVER: &str = "registry.k8s.io/kube-apiserver:v1.33.1";
const EPOCH: u64 = 1_700_000_000;

fn load(world: &World, text: &str, arch: Arch) -> Result<Image, ImageError> {
    let fixture = world.image(text);
    Image::load(fixture.reference.clone(), &fixture.top, arch, &world.cache)
}

/// Every entry of a tar: name, header fields we fix, and content.
fn entries(path: &Path) -> Vec<(String, u32, u64, u64, u64, Vec<u8>)> {
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header().clone();
        assert_eq!(header.username().unwrap(), Some(""));
        assert_eq!(header.groupname().unwrap(), Some(""));
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        out.push((
            entry.path().unwrap().to_string_lossy().into_owned(),
            header.mode().unwrap(),
            header.uid().unwrap(),
            header.gid().unwrap(),
            header.mtime().unwrap(),
            data,
        ));
    }
    out
}

#[test]
fn same_image_and_epoch_give_identical_archive_bytes() {
    let world = world();
    let image = load(&world, APISERVER, Arch::Arm64).unwrap();
    let out = tempfile::tempdir().unwrap();
    let a = archive::write(&image, &world.cache, &out.path().join("a.tar"), EPOCH).unwrap();
    let b = archive::write(&image, &world.cache, &out.path().join("b.tar"), EPOCH).unwrap();
    let (a, b) = (
        std::fs::read(a.path).unwrap(),
        std::fs::read(b.path).unwrap(),
    );
    assert_eq!(a, b);
    let mut memory = Vec::new();
    archive::write_to(&image, &world.cache, &mut memory, EPOCH).unwrap();
    assert_eq!(memory, a);
    let mut other_epoch = Vec::new();
    archive::write_to(&image, &world.cache, &mut other_epoch, 0).unwrap();
    assert_ne!(other_epoch, a, "the epoch must date the entries");
}

#[test]
fn archive_has_the_contract_layout_and_only_the_target_platform() {
    let world = world();
    let fixture = world.image(APISERVER);
    let image = load(&world, APISERVER, Arch::Arm64).unwrap();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join(archive::plain_name(&image.reference));
    assert!(path.ends_with("kube-apiserver:v1.33.1.tar"));
    let written = archive::write(&image, &world.cache, &path, EPOCH).unwrap();
    assert_eq!(written.size, std::fs::metadata(&path).unwrap().len());

    let entries = entries(&path);
    let blobs = archive::blob_digests(&image);
    let mut expected = vec!["blobs/".to_owned(), "blobs/sha256/".to_owned()];
    expected.extend(blobs.iter().map(|d| format!("blobs/sha256/{}", d.hex())));
    expected.extend(["index.json", "manifest.json", "oci-layout"].map(String::from));
    let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, expected);
    for (name, mode, uid, gid, mtime, data) in &entries {
        let want_mode = if name.ends_with('/') { 0o755 } else { 0o644 };
        assert_eq!(
            (*mode, *uid, *gid, *mtime),
            (want_mode, 0, 0, EPOCH),
            "{name}"
        );
        if let Some(hex) = name.strip_prefix("blobs/sha256/").filter(|h| !h.is_empty()) {
            assert_eq!(
                Digest::of(data).hex(),
                hex,
                "blob content must match its name"
            );
        }
    }

    // The index and the arm64 manifest are in; amd64's manifest and the attestations are not.
    let (arm64_manifest, _) = &fixture.per_arch[&Arch::Arm64];
    let (amd64_manifest, _) = &fixture.per_arch[&Arch::Amd64];
    assert!(blobs.contains(&fixture.top) && blobs.contains(arm64_manifest));
    assert!(!blobs.contains(amd64_manifest));
    assert_eq!(blobs.len(), 2 + 1 + image.layers.len());
    assert_eq!(image.platform.architecture, "arm64");

    let json = |name: &str| -> Value {
        let entry = entries.iter().find(|e| e.0 == name).unwrap();
        serde_json::from_slice(&entry.5).unwrap()
    };
    let index = json("index.json");
    assert_eq!(index["schemaVersion"], 2);
    let top = &index["manifests"][0];
    assert_eq!(index["manifests"].as_array().unwrap().len(), 1);
    assert_eq!(top["digest"], fixture.top.to_string());
    assert_eq!(top["mediaType"], MediaType::OciIndex.as_str());
    assert_eq!(top["annotations"][archive::IMAGE_NAME], APISERVER);
    assert_eq!(top["annotations"][archive::REF_NAME], "v1.33.1");
    let manifest = json("manifest.json");
    assert_eq!(manifest[0]["RepoTags"][0], APISERVER);
    assert_eq!(
        manifest[0]["Config"],
        format!("blobs/sha256/{}", image.config.digest.hex())
    );
    let layers: Vec<String> = image
        .layers
        .iter()
        .map(|l| format!("blobs/sha256/{}", l.digest.hex()))
        .collect();
    assert_eq!(manifest[0]["Layers"], serde_json::json!(layers));
    assert_eq!(json("oci-layout")["imageLayoutVersion"], "1.0.0");
}

/// Both platforms of one index in one archive (cks-iso's own image, `make image`): the index,
/// each platform's manifest, config and layers, one `manifest.json` entry per platform with the
/// tag on the first only; the single-platform archive of the first is a subset of it. Platforms
/// of different images are refused, naming both.
#[test]
fn platforms_of_one_index_share_one_archive_and_others_are_refused() {
    let world = world();
    let fixture = world.image(APISERVER);
    let amd64 = load(&world, APISERVER, Arch::Amd64).unwrap();
    let arm64 = load(&world, APISERVER, Arch::Arm64).unwrap();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("both.tar");
    let both = [amd64.clone(), arm64.clone()];
    archive::write_platforms(&both, &world.cache, &path, EPOCH).unwrap();
    let entries = entries(&path);
    let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    let mut expected: Vec<Digest> = archive::blob_digests(&amd64);
    expected.extend(archive::blob_digests(&arm64));
    expected.sort();
    expected.dedup();
    for digest in &expected {
        let name = format!("blobs/sha256/{}", digest.hex());
        assert!(names.contains(&name.as_str()), "{name} missing: {names:?}");
    }
    assert_eq!(names.len(), 2 + expected.len() + 3, "{names:?}");
    for (manifest, _) in fixture.per_arch.values() {
        assert!(expected.contains(manifest));
    }
    let manifest_json: Value =
        serde_json::from_slice(&entries.iter().find(|e| e.0 == "manifest.json").unwrap().5)
            .unwrap();
    assert_eq!(manifest_json.as_array().unwrap().len(), 2);
    assert_eq!(manifest_json[0]["RepoTags"][0], APISERVER);
    assert_eq!(manifest_json[1]["RepoTags"], serde_json::json!([]));
    assert_eq!(
        manifest_json[1]["Config"],
        format!("blobs/sha256/{}", arm64.config.digest.hex())
    );

    let pause = load(&world, "registry.k8s.io/pause:3.10", Arch::Amd64).unwrap();
    let err = archive::write_platforms(&[amd64, pause], &world.cache, &path, EPOCH).unwrap_err();
    assert!(matches!(err, ArchiveError::Platforms { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(APISERVER) && text.contains("pause:3.10"),
        "{text}"
    );
    assert!(err.hint().is_some());
}

#[test]
fn each_fixture_resolves_to_its_platform_manifest() {
    let world = world();
    for fixture in &world.images {
        for (arch, (manifest, _)) in &fixture.per_arch {
            let image = load(&world, &fixture.text, *arch).unwrap();
            assert_eq!(image.top.digest, fixture.top, "{}", fixture.text);
            assert_eq!(&image.manifest.digest, manifest, "{} {arch}", fixture.text);
            assert!(image.platform.matches(*arch));
        }
    }
}

#[test]
fn single_platform_image_for_another_arch_is_refused_by_name() {
    let world = world();
    let err = load(&world, "quay.io/example/amd64-only:1.0", Arch::Arm64).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ImageError::WrongArch { .. }), "{text}");
    assert!(
        text.contains("quay.io/example/amd64-only:1.0") && text.contains("linux/amd64"),
        "{text}"
    );
    assert!(err.hint().unwrap().contains("linux/arm64"));
}

#[test]
fn pinned_digest_must_be_what_the_reference_resolved_to() {
    let world = world();
    let pause = world.image("registry.k8s.io/pause:3.10");
    let pinned = Reference::parse(&format!("{}@{}", pause.text, pause.top)).unwrap();
    let other = &world.image(APISERVER).top;
    let err = Image::load(pinned, other, Arch::Amd64, &world.cache).unwrap_err();
    assert!(matches!(err, ImageError::DigestMismatch { .. }), "{err}");
}

/// Overwrites one byte of a cached blob, as disk corruption or a tampered cache would.
fn corrupt(world: &World, digest: &Digest) -> Digest {
    let path = world.cache.blob_path(digest);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    Digest::of(&bytes)
}

/// A blob damaged on disk after it was stored is hashed while copied, and caught: by the run
/// that stored it (the file is no longer the one it hashed) and by a later run (a new `Cache`,
/// which has verified nothing yet).
#[test]
fn corrupted_cache_blob_names_image_blob_and_digests_and_leaves_no_archive() {
    let world = world();
    let image = load(&world, APISERVER, Arch::Amd64).unwrap();
    let layer = &image.layers[1];
    std::thread::sleep(std::time::Duration::from_millis(20));
    let actual = corrupt(&world, &layer.digest);
    let later_run = Cache::new(world.cache.root());
    for cache in [&world.cache, &later_run] {
        let out = tempfile::tempdir().unwrap();
        let err = archive::write(&image, cache, &out.path().join("x.tar"), EPOCH).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ArchiveError::Mismatch { .. }), "{text}");
        for part in [
            APISERVER,
            "layer 2 of 2",
            &layer.digest.to_string(),
            &actual.to_string(),
        ] {
            assert!(text.contains(part), "{part:?} missing from: {text}");
        }
        assert!(err.hint().is_some());
        assert!(
            crate::support::names(out.path()).is_empty(),
            "no archive and no temp file"
        );
    }
}

#[test]
fn corrupted_cached_manifest_is_refused_when_loading() {
    let world = world();
    let fixture = world.image("busybox:1.36");
    let (manifest, _) = &fixture.per_arch[&Arch::Arm64];
    let actual = corrupt(&world, manifest);
    let err = load(&world, "busybox:1.36", Arch::Arm64).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ImageError::DigestMismatch { .. }), "{text}");
    assert!(text.contains("docker.io/library/busybox:1.36"), "{text}");
    assert!(
        text.contains(&manifest.to_string()) && text.contains(&actual.to_string()),
        "{text}"
    );
}

/// `build`'s sink: each archive spliced into the ISO straight from the cache. The ISO must be
/// byte for byte the one written from a directory of the archives `pull` writes (so each archive
/// inside it is exactly `pull`'s), whether the blobs were verified in this process (read as they
/// are) or not (a later run's cache: hashed while copied).
#[test]
fn archives_spliced_into_an_iso_are_the_bytes_pull_writes() {
    use cks_iso_iso9660::{IsoSpec, Spliced};
    let world = world();
    let images = [
        load(&world, APISERVER, Arch::Amd64).unwrap(),
        load(&world, "busybox:1.36", Arch::Arm64).unwrap(),
    ];
    let spec = IsoSpec {
        volume_id: cks_iso_iso9660::VolumeId::parse(cks_iso_iso9660::DEFAULT_VOLUME_ID).unwrap(),
        epoch: EPOCH as i64,
    };
    let dir = tempfile::tempdir().unwrap();
    let (pulled, staged, out) = (
        dir.path().join("pulled"),
        dir.path().join("staged"),
        dir.path().join("out"),
    );
    for d in [pulled.join("docker"), staged.join("docker"), out.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(pulled.join("version"), "v1\n").unwrap();
    std::fs::write(staged.join("version"), "v1\n").unwrap();
    let mut names = Vec::new();
    for image in &images {
        let name = archive::plain_name(&image.reference);
        let written = archive::write(
            image,
            &world.cache,
            &pulled.join("docker").join(&name),
            EPOCH,
        )
        .unwrap();
        let described = archive::Archive::describe(image, EPOCH).unwrap();
        assert_eq!(
            described.size(),
            written.size,
            "the size is known before writing"
        );
        names.push(name);
    }
    let reference = cks_iso_iso9660::author(&pulled, &out.join("pulled.iso"), &spec, &()).unwrap();
    let later_run = Cache::new(world.cache.root());
    for (i, cache) in [&world.cache, &later_run].into_iter().enumerate() {
        let described: Vec<_> = images
            .iter()
            .map(|image| archive::Archive::describe(image, EPOCH).unwrap())
            .collect();
        let spliced = described
            .iter()
            .zip(&names)
            .map(|(a, name)| Spliced {
                path: format!("docker/{name}"),
                len: a.size(),
                filler: Box::new(a.reader(cache)),
            })
            .collect();
        let iso_path = out.join(format!("spliced-{i}.iso"));
        let written =
            cks_iso_iso9660::author_spliced(&staged, spliced, &iso_path, &spec, &()).unwrap();
        assert_eq!(written.counts, reference.counts);
        assert_eq!(written.sha256, reference.sha256);
        assert!(
            std::fs::read(&iso_path).unwrap() == std::fs::read(&reference.path).unwrap(),
            "the spliced ISO ({i}) differs from the one of pull's archives"
        );
    }
    assert_eq!(
        crate::support::names(&out),
        ["pulled.iso", "spliced-0.iso", "spliced-1.iso"],
        "no placeholder left beside the ISOs"
    );
}

/// A damaged blob fails the spliced ISO naming the image, the blob and both digests, and leaves
/// neither an ISO nor a placeholder behind.
#[test]
fn corrupted_blob_fails_the_spliced_iso_and_leaves_nothing() {
    use cks_iso_iso9660::{IsoError, IsoSpec, Spliced};
    let world = world();
    let image = load(&world, APISERVER, Arch::Amd64).unwrap();
    let layer = &image.layers[1];
    std::thread::sleep(std::time::Duration::from_millis(20));
    let actual = corrupt(&world, &layer.digest);
    let later_run = Cache::new(world.cache.root());
    for cache in [&world.cache, &later_run] {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("staged"), dir.path().join("out"));
        std::fs::create_dir_all(staged.join("docker")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let described = archive::Archive::describe(&image, EPOCH).unwrap();
        let spliced = vec![Spliced {
            path: "docker/x.tar".into(),
            len: described.size(),
            filler: Box::new(described.reader(cache)),
        }];
        let spec = IsoSpec {
            volume_id: cks_iso_iso9660::VolumeId::parse(cks_iso_iso9660::DEFAULT_VOLUME_ID)
                .unwrap(),
            epoch: EPOCH as i64,
        };
        let err = cks_iso_iso9660::author_spliced(&staged, spliced, &out.join("x.iso"), &spec, &())
            .unwrap_err();
        let IsoError::Spliced { path, source } = err else {
            panic!("{err}")
        };
        assert_eq!(path, "docker/x.tar");
        let err = source.downcast::<ArchiveError>().unwrap();
        let text = err.to_string();
        assert!(matches!(*err, ArchiveError::Mismatch { .. }), "{text}");
        for part in [
            APISERVER,
            "layer 2 of 2",
            &layer.digest.to_string(),
            &actual.to_string(),
        ] {
            assert!(text.contains(part), "{part:?} missing from: {text}");
        }
        assert!(
            crate::support::names(&out).is_empty(),
            "no ISO, temp file or placeholder"
        );
    }
}

/// A cached blob that grew or shrank on disk fails the spliced ISO as a mismatch that gives the
/// digest and size of what is on disk now, for both ends of the check (the end of the blob seen
/// too early, and bytes past its end).
#[test]
fn resized_blob_fails_the_spliced_iso_with_its_real_digest_and_size() {
    use cks_iso_iso9660::{IsoError, IsoSpec, Spliced};
    let world = world();
    let image = load(&world, APISERVER, Arch::Amd64).unwrap();
    let layer = &image.layers[1];
    let path = world.cache.blob_path(&layer.digest);
    let good = std::fs::read(&path).unwrap();
    let shorter = good[..good.len() - 7].to_vec();
    let mut longer = good.clone();
    longer.extend_from_slice(b"and then some");
    for changed in [shorter, longer] {
        std::fs::write(&path, &changed).unwrap();
        let cache = Cache::new(world.cache.root());
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("staged"), dir.path().join("out"));
        std::fs::create_dir_all(&staged).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let described = archive::Archive::describe(&image, EPOCH).unwrap();
        let spliced = vec![Spliced {
            path: "docker/x.tar".into(),
            len: described.size(),
            filler: Box::new(described.reader(&cache)),
        }];
        let spec = IsoSpec {
            volume_id: cks_iso_iso9660::VolumeId::parse(cks_iso_iso9660::DEFAULT_VOLUME_ID)
                .unwrap(),
            epoch: EPOCH as i64,
        };
        let err = cks_iso_iso9660::author_spliced(&staged, spliced, &out.join("x.iso"), &spec, &())
            .unwrap_err();
        let IsoError::Spliced { source, .. } = err else {
            panic!("{err}")
        };
        match *source.downcast::<ArchiveError>().unwrap() {
            ArchiveError::Mismatch {
                actual,
                actual_size,
                expected_size,
                ..
            } => {
                assert_eq!(actual, Digest::of(&changed));
                assert_eq!(actual_size, changed.len() as u64);
                assert_eq!(expected_size, good.len() as u64);
            }
            other => panic!("{other}"),
        }
        assert!(
            crate::support::names(&out).is_empty(),
            "no ISO, temp file or placeholder"
        );
    }
}
