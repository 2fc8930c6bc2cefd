//! The file-level plumbing every cks-iso writer shares: outputs that appear whole or not at all
//! (also on Ctrl-C), progress reported without knowing who watches, sha256 on a helper thread,
//! and the one sha256 sum type ([`Sha256Sum`]) every crate shares.
//!
//! A crate of its own, below the ISO writer and the image archives, so those two can stand alone
//! without the network side: it depends on no HTTP client and no async runtime (the compiler
//! enforces what `docs/development/layout.md` promises).

pub mod atomic;
pub mod date;
pub mod hash_thread;
pub mod input;
pub mod progress;
mod sha256;

pub use sha256::{Sha256Malformed, Sha256ParseError, Sha256Sum};
