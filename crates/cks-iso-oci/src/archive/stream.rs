//! The tar stream, laid down by hand around [`tar::Header`]: per entry a 512-byte header, the
//! data, zeros up to the next 512-byte boundary; at the end two zero blocks.
//!
//! The `tar` crate's builder copies entry data through a `&mut dyn Read`, which hides a file from
//! `std::io::copy` and with it the kernel's file-to-file copy. Writing the few headers here keeps
//! [`TarStream::copy_file`] on `copy_file_range`.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

#[cfg(test)]
const BLOCK: u64 = 512;

/// A tar stream being written to `W`.
pub struct TarStream<W> {
    out: W,
}

impl<W: Write> TarStream<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Writes bytes as they are: headers, small entries, padding (see [`super::model`]).
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }

    /// Flushes what was written.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes an entry's header; its data and [`TarStream::pad`] must follow.
    #[cfg(test)]
    pub fn header(&mut self, header: &tar::Header) -> io::Result<()> {
        self.out.write_all(header.as_bytes())
    }

    /// Writes a whole entry whose data is in memory.
    #[cfg(test)]
    pub fn file(&mut self, header: &tar::Header, data: &[u8]) -> io::Result<()> {
        self.header(header)?;
        self.out.write_all(data)?;
        self.pad(data.len() as u64)
    }

    /// Copies `size` bytes of `file` from its start. When `W` is a file too, `std::io::copy`
    /// has the kernel do it (`copy_file_range`, else `sendfile`).
    pub fn copy_file(&mut self, mut file: &File, size: u64) -> io::Result<()> {
        file.rewind()?;
        let mut from = file.take(size);
        let copied = io::copy(&mut from, &mut self.out)?;
        match copied == size {
            true => Ok(()),
            false => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the blob file ended after {copied} of {size} bytes"),
            )),
        }
    }

    /// Copies everything `reader` yields, in large chunks (a stream, not a file).
    pub fn copy(&mut self, reader: &mut impl Read) -> io::Result<()> {
        let mut buf = vec![0; 256 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => self.out.write_all(&buf[..n])?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Pads entry data of `size` bytes to the next block.
    #[cfg(test)]
    pub fn pad(&mut self, size: u64) -> io::Result<()> {
        let pad = (BLOCK - size % BLOCK) % BLOCK;
        self.out.write_all(&[0; BLOCK as usize][..pad as usize])
    }

    /// Ends the archive with two zero blocks and flushes.
    #[cfg(test)]
    pub fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&[0; 2 * BLOCK as usize])?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_with_the_tar_crate() {
        let mut header = tar::Header::new_ustar();
        header.set_path("a").unwrap();
        header.set_size(3);
        header.set_cksum();
        let mut blob = tempfile::tempfile().unwrap();
        blob.write_all(b"0123456789").unwrap();
        let mut out = Vec::new();
        let mut tar = TarStream::new(&mut out);
        tar.file(&header, b"abc").unwrap();
        header.set_path("b").unwrap();
        header.set_size(10);
        header.set_cksum();
        tar.header(&header).unwrap();
        tar.copy_file(&blob, 10).unwrap();
        tar.pad(10).unwrap();
        tar.finish().unwrap();
        assert_eq!(out.len(), 4 * 512 + 1024);
        let mut archive = tar::Archive::new(&out[..]);
        let entries: Vec<(String, Vec<u8>)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut data = Vec::new();
                e.read_to_end(&mut data).unwrap();
                (e.path().unwrap().display().to_string(), data)
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("a".into(), b"abc".to_vec()),
                ("b".into(), b"0123456789".to_vec())
            ]
        );
    }

    #[test]
    fn short_blob_file_is_an_error_not_a_short_entry() {
        let mut blob = tempfile::tempfile().unwrap();
        blob.write_all(b"0123").unwrap();
        let mut tar = TarStream::new(Vec::new());
        let err = tar.copy_file(&blob, 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
