//! A push's blob bytes as a request body read from the cache while it is sent, a frame at a
//! time: an upload holds one frame of its blob in memory, not the blob or the chunk, so a push's
//! peak memory does not grow with `--chunk-size`, layer sizes or `--jobs` times either. The file
//! is opened (and a missing blob reported, naming it) before the request; another attempt opens
//! it again ([`Resend`]).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// Bytes read per frame: large enough that a frame is one or a few TLS records' worth of
/// system calls, small enough that several transfers at once stay within a few MiB.
const FRAME: u64 = 256 * 1024;

/// `len` bytes of an open cached blob from `offset`.
#[derive(Debug)]
pub(super) struct FileSlice {
    file: File,
    left: u64,
}

impl FileSlice {
    /// The slice of `file` from `offset`, `len` bytes long.
    pub(super) fn new(mut file: File, offset: u64, len: u64) -> io::Result<Self> {
        file.seek(SeekFrom::Start(offset))?;
        Ok(Self { file, left: len })
    }
}

impl Body for FileSlice {
    type Data = Bytes;
    type Error = io::Error;

    // A read of a local file in the page cache is short: done in place rather than on a
    // blocking thread, as the cache's other readers on the runtime do.
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let mut buf = vec![0; self.left.min(FRAME) as usize];
        let read = match self.file.read(&mut buf) {
            Ok(0) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the cached blob ended {} bytes early", self.left),
            )),
            other => other,
        };
        Poll::Ready(Some(read.map(|n| {
            buf.truncate(n);
            self.left -= n as u64;
            Frame::data(Bytes::from(buf))
        })))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

/// A request body streamed from the cache ([`FileSlice`]): the slice opened before the first
/// attempt, and opened again for another (a retry, a renewed token). A slice that cannot be
/// opened the second time sends nothing, which the registry refuses by digest.
pub(super) struct Resend<F: Fn() -> Option<FileSlice>> {
    first: Mutex<Option<FileSlice>>,
    again: F,
}

impl<F: Fn() -> Option<FileSlice>> Resend<F> {
    pub(super) fn new(first: FileSlice, again: F) -> Self {
        Self {
            first: Mutex::new(Some(first)),
            again,
        }
    }

    /// The body for this attempt.
    pub(super) fn take(&self) -> reqwest::Body {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner()).take();
        match first.or_else(&self.again) {
            Some(slice) => reqwest::Body::wrap(slice),
            None => reqwest::Body::from(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn drain(mut body: FileSlice) -> Result<Vec<u8>, io::Error> {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
            let data = frame?.into_data().expect("data frames only");
            assert!(data.len() as u64 <= FRAME, "one frame at a time");
            out.extend(data);
        }
        assert!(body.is_end_stream());
        Ok(out)
    }

    #[test]
    fn a_slice_streams_its_bytes_in_bounded_frames_and_a_short_file_fails() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).unwrap();
        let slice = FileSlice::new(file.try_clone().unwrap(), 1000, 600_000).unwrap();
        assert_eq!(slice.size_hint().exact(), Some(600_000));
        assert_eq!(drain(slice).unwrap(), bytes[1000..601_000]);
        let past = FileSlice::new(file, 600_000, 200_000).unwrap();
        let err = drain(past).unwrap_err();
        assert!(
            err.to_string().contains("ended 100000 bytes early"),
            "{err}"
        );
    }
}
