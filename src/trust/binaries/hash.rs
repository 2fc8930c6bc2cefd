//! A covered file's sha256, hashed once per build however often its signature material is
//! fetched again, and on a blocking thread while that material is on its way: apart from the
//! signature checks, which only ask for the digest.

use std::path::{Path, PathBuf};

/// A covered file's sha256, computed on a blocking thread (the file streams through a small
/// buffer, so memory does not grow with its size) while its signature material is fetched, and
/// kept across attempts.
pub(super) struct FileHash {
    path: PathBuf,
    state: HashState,
}

enum HashState {
    Idle,
    Running(tokio::task::JoinHandle<std::io::Result<[u8; 32]>>),
    Done([u8; 32]),
}

impl FileHash {
    /// Not started yet.
    pub(super) fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            state: HashState::Idle,
        }
    }

    /// Starts hashing, unless it has started.
    pub(super) fn start(&mut self) {
        if let HashState::Idle = self.state {
            let path = self.path.clone();
            self.state = HashState::Running(tokio::task::spawn_blocking(move || {
                crate::image::sha256_of(std::fs::File::open(&path)?)
            }));
        }
    }

    /// The file's sha256 (hashing it now if it has not started).
    pub(super) async fn get(&mut self) -> std::io::Result<[u8; 32]> {
        self.start();
        let digest = match &mut self.state {
            HashState::Done(digest) => return Ok(*digest),
            HashState::Running(handle) => handle.await.map_err(std::io::Error::other),
            HashState::Idle => unreachable!("started above"),
        };
        self.state = match digest {
            Ok(Ok(digest)) => HashState::Done(digest),
            // Read again should it be asked for again.
            _ => HashState::Idle,
        };
        digest?
    }
}
