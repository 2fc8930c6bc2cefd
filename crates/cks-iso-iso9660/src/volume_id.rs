//! The volume identifier, validated before anything is written.
//!
//! CKS nodes find the disk with `blkid -t LABEL=CDROM`, so the label is part of the contract and a
//! typo costs a 25-minute timeout on every node. ECMA-119 allows only d-characters (`A-Z`, `0-9`,
//! `_`) and at most 32 of them in the primary volume descriptor.

use std::fmt;

use super::IsoError;

/// The label CloudStack nodes search for.
pub const DEFAULT: &str = "CDROM";

/// Longest volume identifier the primary volume descriptor holds.
pub const MAX_LEN: usize = 32;

/// A volume identifier known to be made of at most 32 d-characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeId(String);

impl VolumeId {
    /// Checks `id` and names the first offending character.
    pub fn parse(id: &str) -> Result<Self, IsoError> {
        let invalid = |reason: String| IsoError::InvalidVolumeId {
            id: id.to_owned(),
            reason,
        };
        if id.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        if id.len() > MAX_LEN {
            return Err(invalid(format!(
                "it is {} characters long; the limit is {MAX_LEN}",
                id.chars().count()
            )));
        }
        if let Some((at, c)) = id
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        {
            return Err(invalid(format!(
                "{c:?} at position {} is not a d-character (A-Z, 0-9, _)",
                at + 1
            )));
        }
        Ok(Self(id.to_owned()))
    }

    /// The identifier as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for VolumeId {
    fn default() -> Self {
        Self(DEFAULT.to_owned())
    }
}

impl fmt::Display for VolumeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_cks_label_and_other_d_strings() {
        for ok in ["CDROM", "A", "K8S_1_33", &"X".repeat(32)] {
            assert_eq!(VolumeId::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn rejects_what_blkid_or_ecma119_would_not_match() {
        for bad in ["", "cdrom", "CD-ROM", "CD ROM", "CDRÖM", &"X".repeat(33)] {
            let err = VolumeId::parse(bad).unwrap_err().to_string();
            assert!(err.contains("volume ID"), "{err}");
        }
    }
}
