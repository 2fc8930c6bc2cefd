//! ISO names (`--name`, `BUILD_NAME`, a lock's `request.name`) become file names in the output
//! directory: `<name>-<uname>.iso`, its `.sha256` and SBOMs. A name is therefore one path
//! component, checked wherever one enters — a lock handed over by someone else included — so no
//! name writes outside `--output`. Pure.

/// An ISO name that is not one plain path component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {given:?} is not a usable ISO name: {reason}")]
pub struct NameError {
    /// Where it came from: `--name`, `BUILD_NAME`, `request.name in run.lock`.
    pub field: String,
    /// The name.
    pub given: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl NameError {
    /// What the user can do.
    pub fn hint() -> String {
        "an ISO name is one file name: letters, digits, `.`, `-`, `_` and the like, without `/` or \
         control characters, e.g. setup-v1.33.1"
            .into()
    }
}

/// Why `name` cannot be an ISO name, if it cannot.
pub fn problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name == "." || name == ".." {
        return Some("it names a directory, not a file");
    }
    if name.contains('/') {
        return Some("it contains `/`, so it would leave the output directory");
    }
    if name.contains('\0') {
        return Some("it contains a NUL byte");
    }
    if name.chars().any(char::is_control) {
        return Some("it contains a control character");
    }
    None
}

/// Checks `name`, given as `field`.
pub fn check(name: &str, field: &str) -> Result<(), NameError> {
    match problem(name) {
        None => Ok(()),
        Some(reason) => Err(NameError {
            field: field.to_owned(),
            given: name.to_owned(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_names_are_one_plain_path_component() {
        for good in ["setup-v1.33.1", "a", "...", "x.y", "ünïcode", "with space"] {
            assert_eq!(problem(good), None, "{good:?}");
        }
        for bad in [
            "", ".", "..", "/abs", "a/b", "../x", "a\0b", "a\nb", "\x1b[31m", "tab\t", "\u{85}",
        ] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
        let err = check("../x", "--name").unwrap_err();
        assert_eq!(
            err.to_string(),
            "--name \"../x\" is not a usable ISO name: it contains `/`, so it would leave the \
             output directory"
        );
    }
}
