//! Durable without waiting: start the disk writing the image while it is still being written.
//!
//! `cks-iso` flushes its ISO before the atomic rename; left alone, the kernel writes back most of a
//! multi-GiB image only when that flush comes, so the disk idles while the image is produced and
//! the CPU idles while the disk catches up. Every completed [`WINDOW`] is handed
//! to `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which queues its write-back and returns at once;
//! the final `fsync` then only waits for what is still in flight.

use std::fs::File;
use std::os::fd::AsRawFd as _;

/// Bytes per write-back request: large enough for the disk to stream, small enough that the
/// final flush finds little left.
const WINDOW: u64 = 8 * 1024 * 1024;

/// Starts write-back of an output file behind its writer.
pub(super) struct WriteBack {
    file: File,
    /// Bytes before this offset have been handed to write-back.
    submitted: u64,
    /// False after the first refusal (a file system without it): then the final flush does all.
    enabled: bool,
}

impl WriteBack {
    /// Starts write-back on `file`, a handle to the output.
    pub(super) fn new(file: File) -> Self {
        Self {
            file,
            submitted: 0,
            enabled: true,
        }
    }

    /// Notes that every byte before `end` has been written (writes come in ascending order), and
    /// queues write-back of the completed windows.
    pub(super) fn written(&mut self, end: u64) {
        if !self.enabled || end < self.submitted + WINDOW {
            return;
        }
        let upto = end - end % WINDOW;
        // SAFETY: sync_file_range only reads its integer arguments; the descriptor is owned by
        // `self.file` and open for the duration of the call.
        let rc = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                self.submitted as libc::off64_t,
                (upto - self.submitted) as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        match rc {
            0 => self.submitted = upto,
            // Only a hint: a refusal leaves the work to the final flush.
            _ => self.enabled = false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn submits_whole_windows_behind_the_writer() {
        let mut file = tempfile::tempfile().unwrap();
        let mut wb = WriteBack::new(file.try_clone().unwrap());
        file.write_all(&vec![7u8; (WINDOW + WINDOW / 2) as usize])
            .unwrap();
        wb.written(WINDOW / 2);
        assert_eq!(wb.submitted, 0);
        wb.written(WINDOW + WINDOW / 2);
        assert!(wb.enabled);
        assert_eq!(wb.submitted, WINDOW);
    }
}
