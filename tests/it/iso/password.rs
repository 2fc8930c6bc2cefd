//! A cosign encrypted key's password asked for on a terminal: `cks-iso sign` run under a real
//! pseudo-terminal by util-linux's `script`, the password typed after the prompt shows. The
//! non-terminal path (refused, naming COSIGN_PASSWORD) is in `signing.rs`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::iso::signing::COSIGN_KEY;
use crate::support::cloud::small_iso;
use crate::support::*;

/// `cks-iso sign ISO --key KEY` under `script`'s pty with COSIGN_PASSWORD unset, `typed` written
/// to the terminal once the prompt showed; what the terminal showed, and the exit code.
fn sign_on_a_terminal(iso: &Path, key: &Path, typed: &str) -> (String, Option<i32>) {
    require("script");
    let bin = env!("CARGO_BIN_EXE_cks-iso");
    let command = format!("{bin} sign {} --key {}", p(iso), p(key));
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_remove("COSIGN_PASSWORD")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Typed after the prompt: input before the echo is turned off would be flushed (TCSAFLUSH).
    std::thread::sleep(Duration::from_secs(2));
    use std::io::Write as _;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(typed.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (combined(&out), out.status.code())
}

#[test]
fn a_cosign_key_password_is_asked_on_the_terminal_without_echo() {
    let dir = tempfile::tempdir().unwrap();
    let iso = small_iso(dir.path(), "a.iso", "1.33.1", "amd64", 1);
    let key = dir.path().join("cosign.key");
    fs::write(&key, COSIGN_KEY).unwrap();
    // A wrong password: refused, and never shown (the terminal did not echo it).
    let (shown, code) = sign_on_a_terminal(&iso, &key, "hunter2-not-it\n");
    assert!(
        shown.contains("password for the cosign key") && shown.contains("cosign.key"),
        "{shown}"
    );
    assert!(shown.contains("the password does not open it"), "{shown}");
    assert!(
        !shown.contains("hunter2"),
        "the password was echoed:\n{shown}"
    );
    assert_eq!(code, Some(2), "{shown}");
    assert!(!Path::new(&format!("{}.sig", iso.display())).exists());
    // The key's own (empty) password: signed.
    let (shown, code) = sign_on_a_terminal(&iso, &key, "\n");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("signed "), "{shown}");
    assert!(Path::new(&format!("{}.sigstore.json", iso.display())).exists());
}
