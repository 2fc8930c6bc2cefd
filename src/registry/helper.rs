//! Running a credential helper (`docker-credential-<name> get`, Docker's credential helper
//! protocol) without letting it hold the run hostage: it gets a deadline and an output cap, and
//! one that misses either is stopped — with everything it started, its own process group — and
//! reported by name. Docker's client waits for a helper as long as it takes and reads all it
//! writes; a helper that hangs (a keychain waiting for an unlock no one will type in CI) or
//! floods (a broken wrapper in a loop) would otherwise stall or exhaust the build.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::Credentials;
use crate::env;

/// How long a helper may take when `CKS_ISO_HELPER_TIMEOUT` does not say: a keychain lookup
/// answers in well under a second; a minute leaves room for a slow network-backed store.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a helper's answer may hold. The answer is one small JSON object (`ServerURL`,
/// `Username`, `Secret`); the largest secrets helpers hand out (cloud registry tokens) are a
/// few KiB, so 1 MiB is generous and anything past it is not an answer.
pub const MAX_ANSWER: u64 = 1 << 20;

/// Why a credential helper gave no answer; logged as a warning, then access goes on without it.
#[derive(Debug, thiserror::Error)]
pub(super) enum HelperError {
    /// It cannot be started or waited for (not on PATH, say).
    #[error("cannot run {program}: {source}")]
    Run {
        /// `docker-credential-<helper>`.
        program: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// It failed.
    #[error("it exited with {0}")]
    Exit(ExitStatus),
    /// It answered something else than the protocol's reply.
    #[error("its answer is not {{\"Username\",\"Secret\"}} JSON")]
    Answer,
    /// It did not finish in time.
    #[error(
        "it did not answer within {} seconds and was stopped (set {} to wait longer)",
        .0.as_secs(),
        env::CKS_ISO_HELPER_TIMEOUT.name
    )]
    Timeout(Duration),
    /// It wrote more than any answer holds.
    #[error(
        "it wrote more than {}, the most an answer may hold, and was stopped",
        indicatif::HumanBytes(MAX_ANSWER)
    )]
    Flood,
    /// `CKS_ISO_HELPER_TIMEOUT` is not a whole number of seconds.
    #[error(
        "{name}={value:?} is not a whole number of seconds (above 0)",
        name = env::CKS_ISO_HELPER_TIMEOUT.name,
        value = .0
    )]
    BadTimeout(String),
}

/// How long a helper may take: `CKS_ISO_HELPER_TIMEOUT` seconds, else [`DEFAULT_TIMEOUT`].
fn timeout() -> Result<Duration, HelperError> {
    match env::CKS_ISO_HELPER_TIMEOUT.get() {
        None => Ok(DEFAULT_TIMEOUT),
        Some(text) => match text.trim().parse::<u64>() {
            Ok(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
            _ => Err(HelperError::BadTimeout(text)),
        },
    }
}

/// Runs `docker-credential-<helper> get` with `server` on stdin, per the credential helper
/// protocol, within the deadline and the output cap. Its output is never shown: it may hold the
/// secret.
pub(super) fn run(
    helper: &str,
    server: &str,
    path: Option<&OsString>,
) -> Result<Option<Credentials>, HelperError> {
    let limit = timeout()?;
    let program = format!("docker-credential-{helper}");
    let failed = |source| HelperError::Run {
        program: program.clone(),
        source,
    };
    let mut command = Command::new(&program);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    // Its own process group, so that stopping it stops what it started (a shell's children
    // keep the pipe open otherwise).
    let mut child = command
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(failed)?;
    let deadline = Instant::now() + limit;
    if let Some(mut stdin) = child.stdin.take() {
        // A server name fits the pipe's buffer: this never blocks, even if it is not read.
        let _ = stdin.write_all(server.as_bytes());
    }
    let Some(stdout) = child.stdout.take() else {
        stop(&mut child);
        return Err(failed(std::io::Error::other("no pipe to its output")));
    };
    // Read on a thread, so that the wait has a deadline; capped one byte past the limit, which
    // tells a full answer from a flood.
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(MAX_ANSWER + 1).read_to_end(&mut out);
        let _ = sender.send(read.map(|_| out));
    });
    let out = match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(out)) if out.len() as u64 > MAX_ANSWER => {
            stop(&mut child);
            return Err(HelperError::Flood);
        }
        Ok(Ok(out)) => out,
        Ok(Err(source)) => {
            stop(&mut child);
            return Err(failed(source));
        }
        Err(_) => {
            stop(&mut child);
            return Err(HelperError::Timeout(limit));
        }
    };
    // Its output is closed: it is exiting, or it closed stdout and went on.
    let status = loop {
        match child.try_wait().map_err(failed)? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                stop(&mut child);
                return Err(HelperError::Timeout(limit));
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    answer(status, &out)
}

/// Kills `child`'s process group and reaps it.
fn stop(child: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The credentials in a helper's `out`, given how it exited.
fn answer(status: ExitStatus, out: &[u8]) -> Result<Option<Credentials>, HelperError> {
    if !status.success() {
        if String::from_utf8_lossy(out).contains("not found") {
            return Ok(None);
        }
        return Err(HelperError::Exit(status));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Reply {
        username: String,
        secret: String,
    }
    let reply: Reply = serde_json::from_slice(out).map_err(|_| HelperError::Answer)?;
    // The protocol's way of handing over an identity token.
    let identity = reply.username == "<token>";
    Ok(Some(Credentials {
        username: reply.username,
        password: reply.secret,
        identity,
        source: String::new(),
    }))
}
