//! How an error reads wherever cks-iso reports one: its message, then each distinct cause below
//! it once, and the advice for a full disk. The command layer's error (`app::AppError`) and the
//! library's own reports of failures it carries on after (a failed `doctor` check) both read an
//! error this way, so that one error reads the same in every place it is printed.

use std::error::Error;

/// What to do about a full disk, whichever command hit it.
pub const FULL_DISK_HINT: &str = "the disk named above is full: free space there, or point \
     --cache-dir, TMPDIR or the output (--output, --out, -o) at a disk with room";

/// The top message and each distinct cause below it, once.
pub fn lines(err: &(dyn Error + 'static)) -> (String, Vec<String>) {
    let mut chain = std::iter::successors(Some(err), |&e| e.source()).map(ToString::to_string);
    let top = chain.next().unwrap_or_default();
    let mut causes: Vec<String> = Vec::new();
    for cause in chain {
        // Some libraries repeat their source's text in their own message; print it once.
        if !top.contains(&cause) && !causes.iter().any(|c| c.contains(&cause)) {
            causes.push(cause);
        }
    }
    (top, causes)
}

/// The top message and its distinct causes on one line, joined by `: `.
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    let (top, causes) = lines(err);
    std::iter::once(top)
        .chain(causes)
        .collect::<Vec<_>>()
        .join(": ")
}

/// `hint`, else [`FULL_DISK_HINT`] when a full disk is anywhere in the chain.
pub fn advice(err: &(dyn Error + 'static), hint: Option<String>) -> Option<String> {
    if hint.is_some() {
        return hint;
    }
    let full = std::iter::successors(Some(err), |&e| e.source()).any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::StorageFull)
    });
    full.then(|| FULL_DISK_HINT.into())
}
