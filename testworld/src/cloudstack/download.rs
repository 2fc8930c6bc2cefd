//! What each zone's secondary storage VM does with a registered ISO: download it from the URL
//! with a plain GET that follows no redirect (`store.download.follow.redirects` is false by
//! default), check the content is ISO 9660 and the checksum as `DownloadManagerImpl` does (the
//! `{ALGORITHM}hex` string compared as given), and report through the copy's state and status.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::Digest as _;

use super::State;
use crate::http;

/// Downloads `iso_id` in each of its zones on a thread, `step_ms` per progress step.
pub(super) fn start(state: Arc<Mutex<State>>, step_ms: u64, iso_id: String) {
    std::thread::spawn(move || {
        let copies = {
            let s = state.lock().unwrap();
            s.isos
                .iter()
                .find(|i| i.id == iso_id)
                .map(|i| (i.url.clone(), i.checksum.clone(), i.copies.len()))
        };
        let Some((url, checksum, zones)) = copies else {
            return;
        };
        for percent in [0, 45] {
            std::thread::sleep(Duration::from_millis(step_ms));
            set_all(
                &state,
                &iso_id,
                "Creating",
                &format!("{percent}% Downloaded"),
            );
        }
        for index in 0..zones {
            let (ready, status) = match fetch(&url) {
                Err(failed) => (false, failed.to_string()),
                Ok(body) => judge(&body, &checksum),
            };
            std::thread::sleep(Duration::from_millis(step_ms));
            let mut s = state.lock().unwrap();
            if let Some(copy) = s
                .isos
                .iter_mut()
                .find(|i| i.id == iso_id)
                .and_then(|i| i.copies.get_mut(index))
            {
                copy.state = if ready { "Ready" } else { "Allocated" }.into();
                copy.status = status;
            }
        }
    });
}

fn set_all(state: &Arc<Mutex<State>>, iso_id: &str, to: &str, status: &str) {
    let mut s = state.lock().unwrap();
    if let Some(iso) = s.isos.iter_mut().find(|i| i.id == iso_id) {
        for copy in &mut iso.copies {
            copy.state = to.into();
            copy.status = status.into();
        }
    }
}

/// A download the storage VM fails; its text is the ISO's status.
#[derive(Debug)]
enum Failed {
    /// Not `http://`.
    NotHttp { url: String },
    /// The request failed.
    Request { url: String, source: std::io::Error },
    /// A redirect, which the storage VM does not follow.
    Redirected { url: String, status: u16 },
    /// Another status than 200.
    Status { status: u16 },
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotHttp { url } => write!(
                f,
                "Failed to download {url}: the test world's storage VM speaks http only"
            ),
            Self::Request { url, source } => write!(f, "Failed to download {url}: {source}"),
            Self::Redirected { url, status } => write!(
                f,
                "Failed to download {url} due to redirection, response code: {status}"
            ),
            Self::Status { status } => write!(f, "HTTP Server returned {status} (expected 200 OK)"),
        }
    }
}

/// The body, or why the download failed.
fn fetch(url: &str) -> Result<Vec<u8>, Failed> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(Failed::NotHttp {
            url: url.to_owned(),
        });
    };
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    // A user and password in the URL are the storage VM's credentials, not part of the address.
    let addr = addr.rsplit_once('@').map_or(addr, |(_, host)| host);
    let reply = http::request(
        addr,
        "GET",
        if path.is_empty() { "/" } else { path },
        &[],
        &[],
    )
    .map_err(|source| Failed::Request {
        url: url.to_owned(),
        source,
    })?;
    match reply.status {
        200 => Ok(reply.body),
        status @ 300..=399 => Err(Failed::Redirected {
            url: url.to_owned(),
            status,
        }),
        status => Err(Failed::Status { status }),
    }
}

/// Ready with the status `TemplateJoinDaoImpl.getTemplateStatus` gives a downloaded ISO
/// ("Successfully Installed"), or the reason it is not.
fn judge(body: &[u8], checksum: &str) -> (bool, String) {
    // ISO 9660: the primary volume descriptor at sector 16 says "CD001".
    if body.get(32769..32774) != Some(b"CD001".as_slice()) {
        return (false, "Template content is unsupported, or mismatch between selected format and template content. Found  : unknown".into());
    }
    if !checksum.is_empty() {
        let (algorithm, _) = match checksum.strip_prefix('{').and_then(|r| r.split_once('}')) {
            Some((a, h)) => (a.to_owned(), h.to_owned()),
            None => ("MD5".to_owned(), checksum.to_owned()),
        };
        let computed = match algorithm.as_str() {
            "SHA-256" => format!("{{SHA-256}}{}", http::hex(&sha2::Sha256::digest(body))),
            other => return (false, format!("checksum algorithm not recognised: {other}")),
        };
        let given = if checksum.starts_with('{') {
            checksum.to_owned()
        } else {
            format!("{{MD5}}{checksum}")
        };
        if computed != given {
            return (
                false,
                format!("checksum \"{computed}\" didn't match the given value, \"{given}\""),
            );
        }
    }
    (true, "Successfully Installed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_checksum_are_judged_as_the_storage_vm_does() {
        let mut iso = vec![0u8; 40_000];
        iso[32769..32774].copy_from_slice(b"CD001");
        let sum = format!("{{SHA-256}}{}", http::hex(&sha2::Sha256::digest(&iso)));
        assert_eq!(judge(&iso, &sum), (true, "Successfully Installed".into()));
        assert!(judge(&iso, &sum.to_uppercase()).1.contains("didn't match"));
        assert!(
            judge(b"not an iso", "")
                .1
                .starts_with("Template content is unsupported")
        );
    }
}
