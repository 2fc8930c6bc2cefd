//! Checking blobs while they are copied into the archive, so each is read exactly once.

use std::io::{self, Read};

use super::ArchiveError;
use crate::image::{Descriptor, Digest, Hashing};

/// Checks bytes already in memory (manifests, read and verified once when the image was loaded,
/// checked again because `Image` fields are public).
pub fn bytes(image: &str, blob: &str, desc: &Descriptor, bytes: &[u8]) -> Result<(), ArchiveError> {
    let actual = Digest::of(bytes);
    match actual == desc.digest && bytes.len() as u64 == desc.size {
        true => Ok(()),
        false => Err(ArchiveError::Mismatch {
            image: image.to_owned(),
            blob: blob.to_owned(),
            expected: desc.digest.clone(),
            actual,
            expected_size: desc.size,
            actual_size: bytes.len() as u64,
        }),
    }
}

/// A reader that hashes a blob as the tar builder copies it, and fails instead of yielding the
/// end of a blob that is longer, shorter or other than its descriptor says.
pub struct Verifying<'a, R> {
    inner: Hashing<io::Take<R>>,
    desc: &'a Descriptor,
    mismatch: bool,
    read_failed: bool,
}

impl<'a, R: Read> Verifying<'a, R> {
    pub fn new(inner: R, desc: &'a Descriptor) -> Self {
        Self {
            // One byte more than the descriptor says is enough to know the blob is too long.
            inner: Hashing::new(inner.take(desc.size.saturating_add(1))),
            desc,
            mismatch: false,
            read_failed: false,
        }
    }

    /// Turns the outcome of copying into the archive into the right error.
    pub fn check(
        mut self,
        copied: io::Result<()>,
        image: &str,
        blob: &str,
    ) -> Result<(), ArchiveError> {
        let Err(err) = copied else { return Ok(()) };
        let desc = self.desc;
        if self.mismatch {
            // Hash the rest of an over-long blob so the error gives its real digest.
            self.inner.get_mut().set_limit(u64::MAX);
            let _ = io::copy(&mut self.inner, &mut io::sink());
            return Err(ArchiveError::Mismatch {
                image: image.to_owned(),
                blob: blob.to_owned(),
                expected: desc.digest.clone(),
                actual: self.inner.digest(),
                expected_size: desc.size,
                actual_size: self.inner.count(),
            });
        }
        Err(match self.read_failed {
            true => ArchiveError::Source {
                image: image.to_owned(),
                blob: blob.to_owned(),
                digest: desc.digest.clone(),
                source: err,
            },
            false => ArchiveError::Output {
                path: Default::default(),
                source: err,
            },
        })
    }
}

impl<R: Read> Read for Verifying<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self
            .inner
            .read(buf)
            .inspect_err(|_| self.read_failed = true)?;
        let count = self.inner.count();
        let at_end = n == 0 && !buf.is_empty();
        let wrong_end =
            at_end && (count != self.desc.size || self.inner.digest() != self.desc.digest);
        if count > self.desc.size || wrong_end {
            self.mismatch = true;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "blob does not match its digest",
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies `content` into a tar as the blob `b"hello"` claims to be, like the writer does.
    fn copy(content: impl Read) -> Result<(), ArchiveError> {
        let desc = Descriptor::new("layer", Digest::of(b"hello"), 5);
        let mut header = tar::Header::new_ustar();
        header.set_size(desc.size);
        header.set_cksum();
        let mut tar = tar::Builder::new(Vec::new());
        let mut reader = Verifying::new(content, &desc);
        let result = tar.append(&header, &mut reader);
        reader.check(result, "img", "layer 1 of 1")
    }

    #[test]
    fn exact_blob_passes() {
        copy(&b"hello"[..]).unwrap();
    }

    #[test]
    fn longer_shorter_or_different_blobs_are_refused_with_their_real_digest() {
        for wrong in [&b"hello!"[..], b"hell", b"jello"] {
            match copy(wrong).unwrap_err() {
                ArchiveError::Mismatch {
                    actual,
                    actual_size,
                    ..
                } => {
                    assert_eq!(actual, Digest::of(wrong));
                    assert_eq!(actual_size, wrong.len() as u64);
                }
                other => panic!("{other}"),
            }
        }
    }

    #[test]
    fn failing_source_is_a_source_error() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk says no"))
            }
        }
        assert!(matches!(copy(Broken), Err(ArchiveError::Source { .. })));
    }
}
