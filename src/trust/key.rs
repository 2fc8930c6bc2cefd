//! The operator's private key, read to sign with (`build --sign-key`, `sign --key`): a PEM key,
//! or cosign's encrypted one opened with `COSIGN_PASSWORD` or a password typed on the terminal.
//!
//! Its own file beside `sign` (which signs and judges) because it is the one place a secret is
//! read from a file and a terminal: the key's bytes and the password never leave it but as the
//! key.

use std::path::Path;

use cks_iso_sigstore::keyed::{self, SigningKey};

use super::sign::{MAX_KEY_SIZE, SignError};

/// Reads the private key to sign with. A cosign encrypted one is opened with `COSIGN_PASSWORD`,
/// else with a password asked for on the terminal without echo (when stdin and stderr are one);
/// with neither, it is refused saying so. Its bytes and the password never leave this function
/// but as the key.
pub fn load_key(path: &Path) -> Result<SigningKey, SignError> {
    let text = crate::input::read_private_text(path, MAX_KEY_SIZE).map_err(|source| {
        SignError::Unreadable {
            what: "the signing key",
            path: path.to_owned(),
            source,
        }
    })?;
    let key_error = |reason: String| SignError::Key {
        what: "the signing key",
        path: path.to_owned(),
        reason,
    };
    let encrypted = keyed::COSIGN_ENCRYPTED_LABELS
        .iter()
        .any(|l| text.contains(&format!("-----BEGIN {l}-----")));
    let password = match crate::env::COSIGN_PASSWORD.get_os() {
        Some(p) => Some(p.into_encoded_bytes()),
        None if encrypted => Some(ask_password(path)?),
        None => None,
    };
    SigningKey::from_pem(&text, password.as_deref()).map_err(|e| key_error(e.into()))
}

/// The password of the cosign key at `path`, typed on the terminal without echo; an error when
/// stdin or stderr is not a terminal (a build in CI must set `COSIGN_PASSWORD`).
fn ask_password(path: &Path) -> Result<Vec<u8>, SignError> {
    use std::io::IsTerminal as _;
    let refuse = |source| SignError::Password {
        path: path.to_owned(),
        source,
    };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(refuse(None));
    }
    let term = console::Term::stderr();
    term.write_str(&format!("password for the cosign key {}: ", path.display()))
        .and_then(|()| term.read_secure_line())
        .map(String::into_bytes)
        .map_err(|e| refuse(Some(e)))
}
