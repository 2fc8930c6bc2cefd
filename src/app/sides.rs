//! The sides `diff` and `upgrade-check` compare, read from files: a lock file, or an ISO's
//! directory, its embedded lock (or its `versions.txt`) and its root manifests — never an image
//! archive, so multi-GB ISOs are quick; and the upgrade verdict on two of them ([`judge`]), which
//! `upgrade-check` prints and `sync` gates its candidates on.
//!
//! Not a command: CLI glue three commands share (errors come back as [`AppError`]s with their exit
//! kind), kept here so that no command imports another (`tests/it/project/layers.rs`). The
//! comparing is [`crate::diff`]'s, the judging [`crate::upgrade`]'s.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use cks_iso_iso9660::read::FileKind;

use super::AppError;
use crate::cli::ShowSignerArgs;
use crate::cloudstack::CloudStack;
use crate::contract;
use crate::diff::{self, EntryInfo, EntryKind, Kind, Side};
use crate::image::Arch;
use crate::lock::{self, Lock, LockError};
use crate::trust::signer::SignerView;
use crate::upgrade::{self, Input};
use crate::verify::{self, Expect};
use crate::versions::{Versions, VersionsError};
use cks_iso_iso9660::read::{IsoReader, ReadError};

/// A lock is a few hundred kB at most; refuse to slurp something huge by mistake.
const LOCK_LIMIT: u64 = 64 * 1024 * 1024;
/// Manifests are text; the biggest upstream ones are a few hundred kB.
const TEXT_LIMIT: u64 = 16 * 1024 * 1024;

/// One side read, its error an [`AppError`]: usage (exit 2) for an input that is not one, else a
/// failure.
pub(super) fn read_side(path: &Path) -> Result<Side, AppError> {
    side(path).map_err(|e| {
        let hint = e.hint();
        match e.is_usage() {
            true => AppError::usage(e, hint),
            false => AppError::failure(e, hint),
        }
    })
}

/// The verdict on FROM → TO (ISOs or locks) for the cluster's CloudStack release (else what TO
/// records): what `upgrade-check` prints, and what `sync` gates its candidates on; with `view`,
/// who signed each ISO too.
pub(super) fn judge(
    from_path: &std::path::Path,
    to_path: &std::path::Path,
    cloudstack: Option<CloudStack>,
    view: Option<&SignerView>,
) -> Result<upgrade::Report, AppError> {
    let mut from = read_side(from_path)?;
    let mut to = read_side(to_path)?;
    if let Some(view) = view {
        signed(&mut from, from_path, view)?;
        signed(&mut to, to_path, view)?;
    }
    let from_scan = scan(&from, from_path)?;
    let to_scan = scan(&to, to_path)?;
    let recorded = to
        .versions
        .get("cloudstack")
        .cloned()
        .flatten()
        .and_then(|c| CloudStack::parse(&c).ok());
    let to_verify = match to.kind {
        Kind::Iso => Some(verify::verify(
            to_path,
            &Expect {
                cloudstack: cloudstack.or(recorded),
                ..Expect::default()
            },
        )?),
        Kind::Lock => None,
    };
    let changes = diff::compare(&from, &to);
    Ok(upgrade::check(&Input {
        from: &from,
        to: &to,
        from_scan: from_scan.as_ref(),
        to_scan: to_scan.as_ref(),
        cloudstack,
        to_verify: to_verify.as_ref(),
        changes: &changes,
    }))
}

/// What the signatures beside the ISOs are checked with: the `--key` files and the
/// `--signer-trusted-root` (read up front, so that a bad one is a usage error).
pub(super) fn signer_view(args: &ShowSignerArgs) -> Result<SignerView, AppError> {
    let flags = crate::trust::sign::SignerFlags {
        keys: &args.keys,
        ..Default::default()
    };
    let keys = crate::trust::sign::signers(&flags)?.map_or_else(Vec::new, |s| s.keys);
    let root = match &args.signer_trusted_root {
        Some(path) => Some(crate::trust::trusted_root(Some(path), None)?.0),
        None => None,
    };
    Ok(SignerView::new(keys, root))
}

/// An ISO side gets the signature beside it, checked; a lock has none.
pub(super) fn signed(
    side: &mut Side,
    path: &std::path::Path,
    view: &SignerView,
) -> Result<(), AppError> {
    if side.kind == Kind::Iso {
        side.signature = Some(view.of(path)?);
    }
    Ok(())
}

/// An ISO's archives as containerd imports them (for its one arch, when it has one); `None` for
/// a lock.
fn scan(side: &diff::Side, path: &std::path::Path) -> Result<Option<upgrade::IsoScan>, AppError> {
    let arch = match side.arches.len() {
        1 => side.arches.keys().next().and_then(|a| Arch::parse(a).ok()),
        _ => None,
    };
    match side.kind {
        Kind::Iso => Ok(Some(upgrade::scan(path, arch)?)),
        Kind::Lock => Ok(None),
    }
}

/// An input `diff` cannot compare (exit 2, like diff(1) on a missing file).
#[derive(Debug, thiserror::Error)]
pub(super) enum InputError {
    /// Cannot open or read the file.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON and not an ISO.
    #[error("{} is neither a cks-iso lock nor an ISO 9660 image ({reason})", path.display())]
    Neither {
        /// The file.
        path: PathBuf,
        /// What the ISO reader said.
        reason: String,
    },
    /// Shorter than its volume.
    #[error(
        "{} is truncated: its volume declares {}, the file has {}",
        path.display(),
        indicatif::HumanBytes(*declared),
        indicatif::HumanBytes(*actual)
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the volume descriptor declares.
        declared: u64,
        /// Bytes on disk.
        actual: u64,
    },
    /// The lock (a file or an ISO's) is not one this cks-iso reads.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// An older ISO's `versions.txt` does not parse.
    #[error("{}: {source}", path.display())]
    Versions {
        /// The ISO.
        path: PathBuf,
        /// The parser's words.
        source: VersionsError,
    },
    /// The ISO's directory or a manifest cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl InputError {
    /// Whether the argument is at fault (exit 2): an input that is no ISO or lock. An ISO the
    /// reader refuses ([`cks_iso_iso9660::bounds`]) is a crafted or damaged one: the work fails
    /// (exit 1), as in `verify`.
    pub(in crate::app) fn is_usage(&self) -> bool {
        !matches!(self, Self::Read(e) if e.refused.is_some())
    }

    /// What the user can do.
    pub(in crate::app) fn hint(&self) -> Option<String> {
        match self {
            Self::Unreadable { .. } => Some("check the path and that you may read the file".into()),
            Self::Neither { .. } => Some(
                "give an ISO (built by cks-iso or the upstream script) or a cks-iso.lock (JSON)"
                    .into(),
            ),
            Self::Truncated { .. } => Some(
                "the copy is incomplete: copy the ISO again and check it against its .sha256"
                    .into(),
            ),
            Self::Lock(e) => e.hint(),
            Self::Read(e) if e.refused.is_some() => Some(e.hint()),
            Self::Versions { .. } | Self::Read(_) => {
                Some("the ISO may be damaged: check it against its .sha256".into())
            }
        }
    }
}

/// Reads `path` as a lock (JSON, first non-blank byte `{`) or else as an ISO.
fn side(path: &Path) -> Result<Side, InputError> {
    let unreadable = |source| InputError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let mut head = Vec::new();
    crate::input::open_regular(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(unreadable)?;
    let label = path.display().to_string();
    if head
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{')
    {
        let mut text = Vec::new();
        crate::input::open_regular(path)
            .and_then(|f| f.take(LOCK_LIMIT).read_to_end(&mut text))
            .map_err(unreadable)?;
        let lock = Lock::parse(&String::from_utf8_lossy(&text), &label)?;
        return Ok(Side::from_lock(&label, Kind::Lock, &lock));
    }
    iso(path, &label)
}

/// Whether `path` carries the ISO 9660 standard identifier where the first volume descriptor is.
fn has_volume_descriptor(path: &Path) -> bool {
    use std::io::{Seek, SeekFrom};
    let mut magic = [0u8; 5];
    crate::input::open_regular(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(16 * 2048 + 1))?;
            f.read_exact(&mut magic)
        })
        .is_ok_and(|()| &magic == b"CD001")
}

fn iso(path: &Path, label: &str) -> Result<Side, InputError> {
    let reader = IsoReader::open(path).map_err(|e| InputError::Neither {
        path: path.to_owned(),
        reason: match has_volume_descriptor(path) {
            // An ISO the reader could not follow: its words say where.
            true => e.reason,
            // Anything else (a text file, a tarball): say what it lacks, not how reading failed.
            false => "it does not start with `{` as a lock does, and has no ISO 9660 volume \
                      descriptor (CD001 at byte 32769)"
                .into(),
        },
    })?;
    let (declared, actual) = reader.sizes();
    if actual < declared {
        return Err(InputError::Truncated {
            path: path.to_owned(),
            declared,
            actual,
        });
    }
    let entries: BTreeMap<String, EntryInfo> = reader
        .entries()?
        .into_iter()
        .map(|e| {
            let kind = match e.kind {
                FileKind::File => EntryKind::File,
                FileKind::Dir => EntryKind::Dir,
                FileKind::Symlink => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            let info = EntryInfo {
                kind,
                size: e.len,
                mode: e.mode,
            };
            (e.path, info)
        })
        .collect();
    let is_file = |p: &str| entries.get(p).is_some_and(|e| e.kind == EntryKind::File);
    let side = if is_file(lock::FILE_NAME) {
        let text = reader.read_small(lock::FILE_NAME, LOCK_LIMIT)?;
        let origin = format!("{label}:{}", lock::FILE_NAME);
        let lock = Lock::parse(&String::from_utf8_lossy(&text), &origin)?;
        Side::from_lock(label, Kind::Iso, &lock)
    } else if is_file(contract::VERSIONS) {
        tracing::warn!(
            "{label} has no {} (built by an older cks-iso?): comparing what its versions.txt \
             says; its platform digests and kubeadm's versions are unknown",
            lock::FILE_NAME
        );
        let text = reader.read_small(contract::VERSIONS, TEXT_LIMIT)?;
        let versions = Versions::parse(&String::from_utf8_lossy(&text)).map_err(|source| {
            InputError::Versions {
                path: path.to_owned(),
                source,
            }
        })?;
        Side::from_versions(label, &versions)
    } else {
        tracing::warn!(
            "{label} has neither {} nor versions.txt (the upstream script built it?): \
             comparing its entries and manifests only",
            lock::FILE_NAME
        );
        Side::bare(label)
    };
    // Root manifests, and whatever else the lock lists as one (the kubelet units).
    let mut texts = BTreeMap::new();
    for (path, e) in &entries {
        let root_yaml = !path.contains('/') && path.ends_with(".yaml");
        if e.kind == EntryKind::File && (root_yaml || side.manifests.contains_key(path)) {
            texts.insert(path.clone(), reader.read_small(path, TEXT_LIMIT)?);
        }
    }
    Ok(side.with_iso(reader.volume_id(), entries, texts))
}
