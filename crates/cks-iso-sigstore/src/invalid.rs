//! Why material does not read, or a check does not pass, as one line naming the field or check.
//!
//! The DER and X.509 readers, the key, SCT, checkpoint and Rekor entry checks below the public
//! error types ([`crate::SignatureError`], [`crate::root::RootError`], …) say why in prose that
//! ends up inside those types' messages (`fails the Rekor inclusion proof check: …`). One
//! type carries that prose, so no function hands a bare `String` around as its error and every
//! place a reason crosses into a public error is an explicit conversion.

use std::fmt;

/// A reason, e.g. `a DER length that is not in its shortest form`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(String);

impl Invalid {
    /// The reason's text.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<&str> for Invalid {
    fn from(reason: &str) -> Self {
        Self(reason.to_owned())
    }
}

impl From<String> for Invalid {
    fn from(reason: String) -> Self {
        Self(reason)
    }
}

impl From<Invalid> for String {
    fn from(invalid: Invalid) -> Self {
        invalid.0
    }
}
