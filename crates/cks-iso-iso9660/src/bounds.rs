//! What reading an ISO may cost, and the ISOs refused because they would cost more.
//!
//! An ISO's directory records say where each directory and file lies; nothing in the format stops
//! two records from naming the same bytes. A crafted 1 MB ISO whose sibling directory records all
//! name one directory gives 30^6 paths without a loop to an ancestor, and every command that
//! lists the ISO (`verify`, `diff`, `upgrade-check`, `cache export --minus`, `--from-iso`) ran for
//! hours with memory growing; 3,000 file records on one 16 MiB extent made each of them read
//! 48 GiB. The rules here hold every listing to the ISO's size:
//!
//! - **A directory is reached once.** ISO writers give every directory its own extent: libisofs
//!   (behind xorriso) places each at the next free block in `calc_dir_pos` (`ecma119.c`),
//!   genisoimage in `assign_directory_addresses` (`write.c`), and hadris-iso, which cks-iso
//!   writes with, one per tree directory; POSIX trees have no hard links to directories, and
//!   Rock Ridge's relocated directories are reached once, by their `CL` record (the copy in
//!   `rr_moved` is hidden). A second record naming a directory already listed is a crafted or
//!   damaged ISO.
//! - **At most [`MAX_ENTRIES`] entries, [`MAX_DEPTH`] levels.** A CKS ISO holds about 100 entries
//!   three levels deep.
//! - **The files name at most twice the ISO's bytes plus 64 MiB** ([`claim_limit`]). Files may
//!   share an extent — hard links do: all three writers write a hard-linked file once — but what
//!   every file record names, summed, then stays within a small multiple of the ISO, so reading every
//!   file (as `verify` and the cache's index do) costs in proportion to the ISO and not to the
//!   records × the extent. Hashing once per extent would bound only the hash, not the archive
//!   readers (`upgrade-check` imports each `docker/` file as containerd does); the sum bounds
//!   them all.

use std::fmt;

use indicatif::HumanBytes;

/// The most entries (files, directories, links) an ISO may list: a CKS ISO lists about 100.
pub const MAX_ENTRIES: usize = 10_000;

/// The deepest an entry may lie (`k8s/kubeadm` lies 2 deep; a CKS ISO's deepest, 3).
pub const MAX_DEPTH: u32 = 32;

/// Slack for small ISOs whose files share extents as hard links.
const CLAIM_SLACK: u64 = 64 << 20;

/// The most bytes the files of an ISO of `size` bytes may name, all records summed.
pub fn claim_limit(size: u64) -> u64 {
    size.saturating_mul(2).saturating_add(CLAIM_SLACK)
}

/// Why an ISO is refused before its files are read: a bound of this module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Two directory records name one directory.
    SharedDirectory {
        /// The second record's path.
        path: String,
        /// The path it was first listed under.
        first: String,
        /// The directory's byte offset in the ISO.
        offset: u64,
    },
    /// More entries than [`MAX_ENTRIES`].
    TooManyEntries {
        /// The entry past the limit.
        path: String,
        /// The limit ([`MAX_ENTRIES`]).
        limit: usize,
    },
    /// An entry deeper than [`MAX_DEPTH`].
    TooDeep {
        /// The entry.
        path: String,
        /// Its depth.
        depth: u32,
        /// The limit ([`MAX_DEPTH`]).
        limit: u32,
    },
    /// The files name more than [`claim_limit`] bytes.
    SharedExtents {
        /// What the file records name, summed.
        claimed: u64,
        /// The ISO's size.
        size: u64,
        /// The records sharing the most shared extent.
        count: usize,
        /// That extent's byte offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// Two of the files naming it.
        examples: (String, String),
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SharedDirectory {
                path,
                first,
                offset,
            } => write!(
                f,
                "directory {path} is the directory {first} again (both name byte {offset}): ISO \
                 writers give every directory its own records, so this ISO is crafted or damaged, \
                 and listing it would list that directory once per path to it"
            ),
            Self::TooManyEntries { path, limit } => write!(
                f,
                "more than {limit} entries (at {path}): a CKS ISO holds about 100, and cks-iso \
                 reads at most {limit}"
            ),
            Self::TooDeep { path, depth, limit } => write!(
                f,
                "{path} lies {depth} directories deep, deeper than the {limit} cks-iso reads (a \
                 CKS ISO is 3 deep)"
            ),
            Self::SharedExtents {
                claimed,
                size,
                count,
                offset,
                len,
                examples: (a, b),
            } => {
                write!(
                    f,
                    "its files name {} but the ISO holds {} (at most {} is read): ",
                    HumanBytes(*claimed),
                    HumanBytes(*size),
                    HumanBytes(claim_limit(*size)),
                )?;
                match count {
                    0 | 1 => write!(
                        f,
                        "their extents overlap or lie past its end, so reading each file would \
                         read the same bytes again"
                    ),
                    _ => write!(
                        f,
                        "{count} files, {a} and {b} among them, share the {} at byte {offset}, \
                         so reading each file would read those bytes {count} times",
                        HumanBytes(*len),
                    ),
                }
            }
        }
    }
}

impl Refusal {
    /// What the user can do: the ISO is not one a writer made as it is.
    pub fn hint(&self) -> String {
        match self {
            Self::TooManyEntries { .. } | Self::TooDeep { .. } => {
                "pass a CKS ISO (built by cks-iso or the upstream script); \
                 docs/concepts/security.md lists the bounds cks-iso reads ISOs within"
                    .into()
            }
            Self::SharedDirectory { .. } | Self::SharedExtents { .. } => {
                "do not use this ISO: take it again from where it was built, or rebuild it with \
                 `cks-iso build --locked` from its lock; docs/concepts/security.md lists the \
                 bounds cks-iso reads ISOs within"
                    .into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_limit_is_twice_the_iso_and_64_mib() {
        assert_eq!(claim_limit(0), 64 << 20);
        assert_eq!(claim_limit(1 << 30), (2 << 30) + (64 << 20));
        assert_eq!(claim_limit(u64::MAX), u64::MAX);
    }

    #[test]
    fn each_refusal_names_what_was_found_and_the_bound() {
        let shared = Refusal::SharedDirectory {
            path: "a/b".into(),
            first: "a/a".into(),
            offset: 4096,
        };
        assert!(
            shared
                .to_string()
                .contains("a/b is the directory a/a again")
        );
        let many = Refusal::TooManyEntries {
            path: "x/y".into(),
            limit: MAX_ENTRIES,
        };
        assert!(
            many.to_string()
                .contains("more than 10000 entries (at x/y)")
        );
        let deep = Refusal::TooDeep {
            path: "d".into(),
            depth: 33,
            limit: MAX_DEPTH,
        };
        assert!(deep.to_string().contains("33 directories deep"));
        let files = Refusal::SharedExtents {
            claimed: 48 << 30,
            size: 17 << 20,
            count: 3000,
            offset: 65536,
            len: 16 << 20,
            examples: ("docker/a.tar".into(), "docker/b.tar".into()),
        };
        let said = files.to_string();
        assert!(
            said.contains("name 48.00 GiB but the ISO holds 17.00 MiB"),
            "{said}"
        );
        assert!(said.contains("3000 files, docker/a.tar and docker/b.tar among them"));
        assert!(said.contains("16.00 MiB at byte 65536"), "{said}");
        let overlapping = Refusal::SharedExtents {
            claimed: 48 << 30,
            size: 17 << 20,
            count: 1,
            offset: 0,
            len: 0,
            examples: Default::default(),
        };
        let said = overlapping.to_string();
        assert!(
            said.contains("their extents overlap or lie past its end"),
            "{said}"
        );
    }
}
