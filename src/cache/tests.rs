use std::io::Read;

use super::*;

fn files(cache: &Cache) -> Vec<String> {
    let dir = cache.root().join(BLOBS);
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn verified_blob_is_stored_under_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = Digest::of(b"layer");
    assert!(!cache.contains(&digest));
    assert_eq!(cache.put(&digest, Some(5), &b"layer"[..]).unwrap(), 5);
    assert!(cache.contains(&digest));
    assert_eq!(files(&cache), [digest.hex()]);
    let mut back = String::new();
    cache
        .open(&digest)
        .unwrap()
        .read_to_string(&mut back)
        .unwrap();
    assert_eq!(back, "layer");
    assert_eq!(cache.put_bytes(b"layer").unwrap(), digest);
}

#[test]
fn wrong_content_names_both_digests_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let expected = Digest::of(b"layer");
    let err = cache.put(&expected, None, &b"layeR"[..]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&expected.to_string()), "{text}");
    assert!(text.contains(&Digest::of(b"layeR").to_string()), "{text}");
    assert!(files(&cache).is_empty(), "{:?}", files(&cache));
    assert!(!cache.contains(&expected));
}

#[test]
fn wrong_size_is_refused_even_when_the_prefix_matches() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let expected = Digest::of(b"lay");
    let err = cache.put(&expected, Some(3), &b"layer"[..]).unwrap_err();
    assert!(
        matches!(err, CacheError::Mismatch { actual_size: 4, .. }),
        "{err}"
    );
    let err = cache.put(&expected, Some(4), &b"lay"[..]).unwrap_err();
    assert!(
        matches!(err, CacheError::Mismatch { actual_size: 3, .. }),
        "{err}"
    );
    assert!(files(&cache).is_empty());
}

#[test]
fn failing_source_leaves_no_file() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("connection reset"))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let err = cache.put(&Digest::of(b"x"), None, Broken).unwrap_err();
    assert!(matches!(err, CacheError::Source { .. }), "{err}");
    assert!(files(&cache).is_empty());
}

#[test]
fn missing_blob_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let err = cache.open(&Digest::of(b"x")).unwrap_err();
    assert!(matches!(err, CacheError::NotFound { .. }), "{err}");
    let err = BlobSource::open(&cache, &Digest::of(b"x")).err().unwrap();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[test]
fn default_root_follows_xdg_then_home() {
    let root = |x: Option<&str>, h: Option<&str>| root_from(x.map(Into::into), h.map(Into::into));
    assert_eq!(
        root(Some("/x"), Some("/h")),
        Some(PathBuf::from("/x/cks-iso"))
    );
    assert_eq!(
        root(Some("rel"), Some("/h")),
        Some(PathBuf::from("/h/.cache/cks-iso"))
    );
    assert_eq!(
        root(None, Some("/h")),
        Some(PathBuf::from("/h/.cache/cks-iso"))
    );
    assert_eq!(root(None, None), None);
}

/// Only blobs this process hashed are handed out for copying unhashed; a blob left by an earlier
/// run is hashed on its first copy and trusted once that copy confirms it.
#[test]
fn only_blobs_hashed_by_this_process_are_copied_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let stored = Cache::new(dir.path());
    let digest = stored.put_bytes(b"layer").unwrap();
    assert!(matches!(
        stored.open_for_copy(&digest).unwrap(),
        Opened::Verified(_)
    ));
    let later_run = Cache::new(dir.path());
    assert!(matches!(
        later_run.open_for_copy(&digest).unwrap(),
        Opened::Unverified(_)
    ));
    later_run.confirm(&digest);
    assert!(matches!(
        later_run.clone().open_for_copy(&digest).unwrap(),
        Opened::Verified(_)
    ));
}

/// A blob cut short (a power loss before the kernel wrote it out) does not count, and storing
/// it again replaces it; nothing is deleted behind another image's back.
#[test]
fn blob_of_the_wrong_size_is_not_counted_and_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = cache.put_bytes(b"layer").unwrap();
    assert!(cache.contains_sized(&digest, 5));
    std::fs::write(cache.blob_path(&digest), b"lay").unwrap();
    assert!(!cache.contains_sized(&digest, 5));
    assert!(cache.contains(&digest), "left in place");
    assert_eq!(cache.put_bytes(b"layer").unwrap(), digest);
    assert_eq!(std::fs::read(cache.blob_path(&digest)).unwrap(), b"layer");
    assert!(cache.contains_sized(&digest, 5));
}

/// A blob written to after this process hashed it is no longer handed out unhashed.
#[test]
fn blob_changed_since_it_was_hashed_is_copied_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = cache.put_bytes(b"layer").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(cache.blob_path(&digest), b"LAYER").unwrap();
    assert!(matches!(
        cache.open_for_copy(&digest).unwrap(),
        Opened::Unverified(_)
    ));
}

#[test]
fn a_blob_writer_resumes_verifies_and_alone_names_the_blob() {
    use crate::fetch::Sink;
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = Digest::of(b"layer");
    let mut writer = cache.blob_writer(&digest).unwrap();
    // A temporary name stamped with this process, beside the final one; nothing named yet.
    let temp = writer.temp_path().to_owned();
    let name = temp.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.contains(&std::process::id().to_string()), "{name}");
    assert!(name.ends_with(".partial"), "{name}");
    assert_eq!(temp.parent(), cache.blob_path(&digest).parent());
    // A response cut short and resumed: what is kept is where the next `Range` starts.
    writer.write(b"la").unwrap();
    assert_eq!(writer.written(), 2);
    assert!(!cache.contains(&digest));
    writer.write(b"yer").unwrap();
    assert_eq!(writer.commit(Some(5)).unwrap(), 5);
    assert_eq!(files(&cache), [digest.hex()]);
    assert!(!temp.exists());

    // A server that ignored `Range` and sent everything: start over, then verify.
    let other = Digest::of(b"other");
    let mut writer = cache.blob_writer(&other).unwrap();
    writer.write(b"ot").unwrap();
    writer.restart().unwrap();
    writer.write(b"other").unwrap();
    writer.commit(None).unwrap();
    assert!(cache.contains(&other));

    // Bytes that are not the blob never get its name, and leave no file behind.
    let wanted = Digest::of(b"third");
    let mut writer = cache.blob_writer(&wanted).unwrap();
    writer.write(b"thirD").unwrap();
    let err = writer.commit(Some(5)).unwrap_err();
    assert!(
        matches!(err, CacheError::Mismatch { actual_size: 5, .. }),
        "{err}"
    );
    assert!(!cache.contains(&wanted));
    assert_eq!(files(&cache).len(), 2, "{:?}", files(&cache));
}

#[test]
fn blob_parts_written_out_of_order_are_named_only_when_they_hash_right() {
    use std::os::unix::fs::FileExt as _;
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = Digest::of(b"partsofablob");
    let mut parts = cache.blob_parts(&digest, 12).unwrap();
    let temp = parts.temp_path().to_owned();
    // The last part first, as ranged downloads finish in any order.
    parts.file().write_all_at(b"blob", 8).unwrap();
    parts.file().write_all_at(b"partsofa", 0).unwrap();
    assert!(!cache.contains(&digest));
    parts.commit().unwrap();
    assert!(cache.contains(&digest));
    assert!(!temp.exists());

    // A part with wrong bytes: no name, no file left, both digests in the error.
    let wanted = Digest::of(b"another blob");
    let mut parts = cache.blob_parts(&wanted, 12).unwrap();
    let temp = parts.temp_path().to_owned();
    parts.file().write_all_at(b"another BLOB", 0).unwrap();
    let err = parts.commit().unwrap_err();
    assert!(
        matches!(&err, CacheError::Mismatch { expected, actual_size: 12, .. } if *expected == wanted),
        "{err}"
    );
    assert!(!cache.contains(&wanted));
    assert!(!temp.exists());
}

#[test]
fn a_blob_or_index_entry_that_is_a_symbolic_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("cache"));
    let digest = Digest::of(b"elsewhere");
    let outside = dir.path().join("outside");
    std::fs::write(&outside, b"elsewhere").unwrap();
    std::fs::create_dir_all(cache.blob_path(&digest).parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&outside, cache.blob_path(&digest)).unwrap();
    assert!(!cache.contains(&digest));
    assert_eq!(cache.size_of(&digest), None);
    assert!(cache.open(&digest).is_err());
    // Stored for real, the link is replaced by the verified file.
    cache.put_bytes(b"elsewhere").unwrap();
    assert!(!cache.blob_path(&digest).is_symlink());
    assert!(cache.contains(&digest));

    // An index entry linked to one written elsewhere is not read.
    let other = Cache::new(dir.path().join("other"));
    other.put_bytes(b"elsewhere").unwrap();
    other
        .remember(&Key::Tag("x:1".into()), &digest, 9, "x")
        .unwrap();
    cache.put_bytes(b"elsewhere").unwrap();
    let entry = cache.index_path("tag:x:1");
    std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(other.index_path("tag:x:1"), &entry).unwrap();
    assert_eq!(cache.recall(&Key::Tag("x:1".into())), None);
    assert!(cache.index_entries().unwrap().is_empty());
    assert!(other.recall(&Key::Tag("x:1".into())).is_some());
}
