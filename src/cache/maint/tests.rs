use std::time::{Duration, SystemTime};

use super::*;
use crate::cache::Key;

fn corrupt(cache: &Cache, good: &[u8]) -> Digest {
    let digest = cache.put_bytes(good).unwrap();
    let mut bad = good.to_vec();
    bad[0] ^= 1;
    std::fs::write(cache.blob_path(&digest), bad).unwrap();
    digest
}

#[test]
fn a_corrupt_blob_is_removed_only_while_it_is_the_file_that_was_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let digest = corrupt(&cache, b"layer bytes");
    let rehashed = cache.rehash(&digest).unwrap();
    assert_ne!(rehashed.actual, digest);
    assert_eq!(rehashed.size, 11);
    // Another process puts a verified copy in place between the hash and the removal.
    let fresh = dir.path().join("fresh");
    std::fs::write(&fresh, b"layer bytes").unwrap();
    std::fs::rename(&fresh, cache.blob_path(&digest)).unwrap();
    assert!(!cache.remove_corrupt(&digest, &rehashed).unwrap());
    assert_eq!(
        cache.rehash(&digest).unwrap().actual,
        digest,
        "the good copy stays"
    );
    let (blobs, strays) = cache.blob_files().unwrap();
    assert_eq!(blobs.len(), 1);
    assert!(strays.is_empty(), "nothing left aside: {strays:?}");

    let digest = corrupt(&cache, b"config bytes");
    let rehashed = cache.rehash(&digest).unwrap();
    assert!(cache.remove_corrupt(&digest, &rehashed).unwrap());
    assert!(!cache.contains(&digest));
    assert!(
        !cache.remove_corrupt(&digest, &rehashed).unwrap(),
        "already gone"
    );
}

#[test]
fn an_index_entry_rewritten_meanwhile_is_not_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let old = cache.put_bytes(b"old").unwrap();
    let new = cache.put_bytes(b"new!").unwrap();
    cache
        .remember(&Key::Tag("x:1".into()), &old, 3, "x")
        .unwrap();
    let entry = cache.index().unwrap().remove(0);
    assert_eq!((entry.key.as_str(), &entry.digest), ("tag:x:1", &old));
    cache
        .remember(&Key::Tag("x:1".into()), &new, 4, "x")
        .unwrap();
    assert!(!cache.forget(&entry).unwrap());
    assert_eq!(cache.recall(&Key::Tag("x:1".into())).unwrap().digest, new);
    let entry = cache.index().unwrap().remove(0);
    assert!(cache.forget(&entry).unwrap());
    assert!(cache.recall(&Key::Tag("x:1".into())).is_none());
    assert!(cache.index_files().unwrap().1.is_empty());
}

#[test]
fn temporary_files_are_stale_only_after_an_idle_hour() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    cache.put_bytes(b"blob").unwrap();
    let blobs = dir.path().join(BLOBS);
    std::fs::write(blobs.join(".abc.123.partial"), b"half").unwrap();
    std::fs::write(blobs.join("notes.txt"), b"mine").unwrap();
    let (blobs, strays) = cache.blob_files().unwrap();
    assert_eq!(blobs.len(), 1);
    let temp = strays.iter().find(|s| s.temporary).unwrap();
    assert!(!temp.stale, "just written");
    assert!(strays.iter().any(|s| !s.temporary && !s.stale));
    let meta = std::fs::metadata(&temp.path).unwrap();
    let later = SystemTime::now() + STALE_AFTER + Duration::from_secs(5);
    let judged = stray(temp.path.clone(), ".abc.123.partial", &meta, later);
    assert!(judged.stale);
    assert!(cache.remove_stray(&judged).unwrap());
    assert!(!temp.path.exists());
}

#[test]
fn rehash_reads_a_blob_larger_than_its_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let digest = cache.put_bytes(&big).unwrap();
    let rehashed = cache.rehash(&digest).unwrap();
    assert_eq!((rehashed.actual, rehashed.size), (digest, big.len() as u64));
}
