//! Spliced files: files of the image whose bytes do not exist on disk before the image is written
//! but are produced, front to back, while it is (`build` writes each image archive once,
//! straight into its extent of the ISO, instead of into `docker/*.tar` and then again into the ISO).
//!
//! hadris-iso takes file content only from memory or from a host path, so a spliced file enters
//! the tree as a sparse placeholder of its exact length (no data: reading it yields zeros). The
//! plan tells where each placeholder's extents lie in the image; the output device
//! ([`super::device`]) replaces the zeros written there with the bytes from the file's [`Filler`],
//! so the image is byte-identical to one written from a real file with the same content.
//!
//! The placeholders are anonymous memory files (`memfd_create`) hadris opens through
//! `/proc/self/fd`: reading a hole there copies the kernel's zero page, where a hole of a sparse
//! file on disk gets a fresh page-cache page zeroed per 4 KiB (a tenth of the writing thread's time
//! in a profile of a cold `build`), and they vanish with the process, even when it is killed.
//! Where the kernel or a sandbox refuses them, or `/proc` is not mounted, they are sparse files in
//! a private directory beside the output, removed on drop and on Ctrl-C.

use std::error::Error;
use std::fs::File;
use std::os::fd::{AsRawFd as _, FromRawFd as _};
use std::path::{Path, PathBuf};

use hadris_fs::{Extent, Report};

use super::IsoError;
use cks_iso_io::atomic::Pending;

/// Produces a spliced file's bytes, in order.
pub trait Filler {
    /// Fills all of `buf` with the file's next bytes. Called with consecutive ranges, from the
    /// first byte to the last, each byte once.
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Box<dyn Error + Send + Sync>>;
}

/// A file to splice into the image.
pub struct Spliced<'a> {
    /// Its path in the image, relative to the root (`docker/x.tar`); its parent directories are
    /// created as needed.
    pub path: String,
    /// Its exact length in bytes.
    pub len: u64,
    /// Where its bytes come from.
    pub filler: Box<dyn Filler + 'a>,
}

/// The placeholders: memory files, or a private directory of sparse files; none when nothing is
/// spliced, so `cks-iso iso` puts nothing but its temporary ISO beside the output.
pub(super) struct Placeholders {
    /// The memory files' descriptors, which their `/proc/self/fd` paths name.
    _memory: Vec<File>,
    _dir: Option<Pending>,
}

impl Placeholders {
    /// Creates one placeholder per file, in memory where the system allows, else in a fresh
    /// directory in `beside`.
    pub(super) fn create(
        beside: &Path,
        files: &[Spliced<'_>],
    ) -> Result<(Self, Vec<PathBuf>), IsoError> {
        let lens: Vec<u64> = files.iter().map(|f| f.len).collect();
        if lens.is_empty() {
            return Ok((Self::none(), Vec::new()));
        }
        match in_memory(&lens) {
            Some(made) => Ok(made),
            None => on_disk(beside, &lens),
        }
    }

    fn none() -> Self {
        Self {
            _memory: Vec::new(),
            _dir: None,
        }
    }
}

/// Memory-file placeholders of `lens`, or `None` if any cannot be made or reached by path.
fn in_memory(lens: &[u64]) -> Option<(Placeholders, Vec<PathBuf>)> {
    let mut memory = Vec::with_capacity(lens.len());
    let mut paths = Vec::with_capacity(lens.len());
    for &len in lens {
        // SAFETY: the name is a NUL-terminated string literal; the call only creates a descriptor.
        let fd = unsafe { libc::memfd_create(c"cks-iso-placeholder".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just returned by memfd_create and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len).ok()?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        // hadris opens the path: it must lead to this file (no /proc, or another one, fails here).
        if std::fs::metadata(&path).ok()?.len() != len {
            return None;
        }
        memory.push(file);
        paths.push(path);
    }
    let placeholders = Placeholders {
        _memory: memory,
        _dir: None,
    };
    Some((placeholders, paths))
}

/// Sparse-file placeholders of `lens` in a fresh private directory in `beside`.
fn on_disk(beside: &Path, lens: &[u64]) -> Result<(Placeholders, Vec<PathBuf>), IsoError> {
    let fail = |source| IsoError::OutputDir {
        dir: beside.to_owned(),
        source,
    };
    let dir = tempfile::Builder::new()
        .prefix(".cks-iso-splice.")
        .tempdir_in(beside)
        .map_err(fail)?
        .keep();
    let dir = Pending::track(dir);
    let mut paths = Vec::with_capacity(lens.len());
    for (i, &len) in lens.iter().enumerate() {
        let path = dir.path().join(i.to_string());
        File::create(&path)
            .and_then(|f| f.set_len(len))
            .map_err(fail)?;
        paths.push(path);
    }
    let placeholders = Placeholders {
        _memory: Vec::new(),
        _dir: Some(dir),
    };
    Ok((placeholders, paths))
}

/// Where a spliced file's bytes go: image bytes `[start, start + len)` hold the file's bytes from
/// `file_offset`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Region {
    pub start: u64,
    pub len: u64,
    pub file_offset: u64,
    /// Index into the spliced files.
    pub file: usize,
}

/// The regions of every spliced file in the image the report describes, by image offset.
pub(super) fn regions(report: &Report, files: &[Spliced<'_>]) -> Result<Vec<Region>, IsoError> {
    let mut regions = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let tree_path = format!("/{}", file.path);
        let extents: &[Extent] = report.extents(tree_path.as_bytes()).unwrap_or_default();
        let placed: u64 = extents.iter().map(Extent::len).sum();
        if placed != file.len {
            return Err(IsoError::Spliced {
                path: file.path.clone(),
                source: format!("the plan placed {placed} of its {} bytes", file.len).into(),
            });
        }
        // Extents come in file order; their file offsets are counted here rather than trusted.
        let mut file_offset = 0;
        for e in extents {
            regions.push(Region {
                start: e.offset(),
                len: e.len(),
                file_offset,
                file: i,
            });
            file_offset += e.len();
        }
    }
    regions.sort_by_key(|r| r.start);
    Ok(regions)
}

/// The fillers and how far each got, for the device.
pub(super) struct Splicer<'a> {
    files: Vec<Spliced<'a>>,
    regions: Vec<Region>,
    /// Bytes handed out per file.
    filled: Vec<u64>,
    /// The first failure, with the file's image path.
    pub failed: Option<(String, Box<dyn Error + Send + Sync>)>,
}

impl<'a> Splicer<'a> {
    pub(super) fn new(files: Vec<Spliced<'a>>, regions: Vec<Region>) -> Self {
        Self {
            filled: vec![0; files.len()],
            files,
            regions,
            failed: None,
        }
    }

    /// Whether image bytes `[offset, end)` hold any spliced byte.
    pub(super) fn touches(&self, offset: u64, end: u64) -> bool {
        let first = self.regions.partition_point(|r| r.start + r.len <= offset);
        self.regions.get(first).is_some_and(|r| r.start < end)
    }

    /// Whether image bytes `[offset, end)` all belong to one spliced file, so that
    /// [`splice`](Self::splice) overwrites every byte of a buffer for them.
    pub(super) fn covers(&self, offset: u64, end: u64) -> bool {
        let first = self.regions.partition_point(|r| r.start + r.len <= offset);
        self.regions
            .get(first)
            .is_some_and(|r| r.start <= offset && end <= r.start + r.len)
    }

    /// Overwrites the parts of `buf`, the image's bytes from `offset`, that belong to spliced
    /// files. Returns whether anything was spliced; `Err` after a filler failed (kept in
    /// [`Splicer::failed`]).
    pub(super) fn splice(&mut self, offset: u64, buf: &mut [u8]) -> Result<bool, ()> {
        let end = offset + buf.len() as u64;
        let first = self.regions.partition_point(|r| r.start + r.len <= offset);
        let mut any = false;
        for region in &self.regions[first..] {
            if region.start >= end {
                break;
            }
            let from = region.start.max(offset);
            let to = (region.start + region.len).min(end);
            let file_pos = region.file_offset + (from - region.start);
            let file = &mut self.files[region.file];
            let result = if self.filled[region.file] != file_pos {
                Err(format!(
                    "written out of order: byte {file_pos} asked after {}",
                    self.filled[region.file]
                )
                .into())
            } else {
                file.filler
                    .fill(&mut buf[(from - offset) as usize..(to - offset) as usize])
            };
            if let Err(source) = result {
                self.failed.get_or_insert((file.path.clone(), source));
                return Err(());
            }
            self.filled[region.file] = file_pos + (to - from);
            any = true;
        }
        Ok(any)
    }

    /// Checks that every spliced file was written whole.
    pub(super) fn finish(&self) -> Result<(), IsoError> {
        for (file, filled) in self.files.iter().zip(&self.filled) {
            if *filled != file.len {
                return Err(IsoError::Spliced {
                    path: file.path.clone(),
                    source: format!("{filled} of its {} bytes were written", file.len).into(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u8);
    impl Filler for Counting {
        fn fill(&mut self, buf: &mut [u8]) -> Result<(), Box<dyn Error + Send + Sync>> {
            for b in buf {
                *b = self.0;
                self.0 = self.0.wrapping_add(1);
            }
            Ok(())
        }
    }

    #[test]
    fn splices_only_inside_regions_and_in_order() {
        let files = vec![Spliced {
            path: "a".into(),
            len: 6,
            filler: Box::new(Counting(1)),
        }];
        let regions = vec![
            Region {
                start: 4,
                len: 4,
                file_offset: 0,
                file: 0,
            },
            Region {
                start: 12,
                len: 2,
                file_offset: 4,
                file: 0,
            },
        ];
        let mut s = Splicer::new(files, regions);
        assert!(s.covers(4, 8) && s.covers(5, 6) && s.covers(12, 14));
        assert!(!s.covers(3, 8) && !s.covers(4, 9) && !s.covers(6, 13) && !s.covers(0, 2));
        let mut buf = [0u8; 10];
        assert!(s.splice(0, &mut buf).unwrap());
        assert_eq!(buf, [0, 0, 0, 0, 1, 2, 3, 4, 0, 0]);
        let mut buf = [9u8; 6];
        assert!(s.splice(10, &mut buf).unwrap());
        assert_eq!(buf, [9, 9, 5, 6, 9, 9]);
        assert!(!s.splice(16, &mut [0u8; 4]).unwrap());
        s.finish().unwrap();
    }

    fn reads_as_zeros_of(path: &Path, len: u64) {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(bytes.len() as u64, len);
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn memory_placeholders_read_as_zeros_and_leave_nothing_beside_the_output() {
        let beside = tempfile::tempdir().unwrap();
        let files = vec![
            Spliced {
                path: "docker/a.tar".into(),
                len: 3 * 4096 + 5,
                filler: Box::new(Counting(0)),
            },
            Spliced {
                path: "docker/b.tar".into(),
                len: 0,
                filler: Box::new(Counting(0)),
            },
        ];
        let (placeholders, paths) = Placeholders::create(beside.path(), &files).unwrap();
        assert!(paths.iter().all(|p| p.starts_with("/proc/self/fd")));
        reads_as_zeros_of(&paths[0], 3 * 4096 + 5);
        reads_as_zeros_of(&paths[1], 0);
        assert_eq!(std::fs::read_dir(beside.path()).unwrap().count(), 0);
        drop(placeholders);
    }

    #[test]
    fn disk_placeholders_read_as_zeros_and_their_directory_goes_on_drop() {
        let beside = tempfile::tempdir().unwrap();
        let (placeholders, paths) = on_disk(beside.path(), &[70_000, 1]).unwrap();
        reads_as_zeros_of(&paths[0], 70_000);
        reads_as_zeros_of(&paths[1], 1);
        assert_eq!(std::fs::read_dir(beside.path()).unwrap().count(), 1);
        drop(placeholders);
        assert_eq!(std::fs::read_dir(beside.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_skipped_range_is_an_error() {
        let files = vec![Spliced {
            path: "a".into(),
            len: 4,
            filler: Box::new(Counting(0)),
        }];
        let regions = vec![Region {
            start: 0,
            len: 4,
            file_offset: 0,
            file: 0,
        }];
        let mut s = Splicer::new(files, regions);
        assert!(s.splice(2, &mut [0u8; 2]).is_err());
        assert_eq!(s.failed.as_ref().unwrap().0, "a");
    }
}
