//! The ISO's URL checked before CloudStack is told about it, the way its secondary storage will
//! fetch it: at most 255 characters (the column's size), `http` or `https`, a path ending in
//! `.iso`, and a `HEAD` that is answered `200` with the ISO's size *without following redirects*
//! (the download does not follow them unless `store.download.follow.redirects` is set, so a
//! release URL that redirects to a CDN fails there after minutes; here it fails at once).

use std::time::Duration;

/// The longest URL CloudStack stores.
pub const MAX_URL: usize = 255;

/// A URL the secondary storage would not download the ISO from.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// Longer than CloudStack stores.
    #[error("the URL {url} is {len} characters long; CloudStack takes at most {MAX_URL}")]
    TooLong {
        /// The URL.
        url: String,
        /// Its length.
        len: usize,
    },
    /// Not http or https.
    #[error("the URL {url} is not http or https")]
    Scheme {
        /// The URL.
        url: String,
    },
    /// Its path does not end in `.iso`.
    #[error("the URL {url} does not end in .iso; CloudStack refuses an ISO URL that does not")]
    NotIso {
        /// The URL.
        url: String,
    },
    /// Not reachable from here.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// Answered with a redirect.
    #[error(
        "{url} answers {status} redirecting to {location}, which CloudStack does not follow by default"
    )]
    Redirect {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
        /// Where to.
        location: String,
    },
    /// Answered with another status.
    #[error("{url} answers HEAD with {status}, expected 200")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// Serves another size than the ISO's.
    #[error("{url} serves {actual} bytes, but {iso} has {expected}")]
    Size {
        /// The URL.
        url: String,
        /// The local ISO.
        iso: String,
        /// The ISO's size.
        expected: u64,
        /// `Content-Length`, or `none`.
        actual: String,
    },
}

impl UrlError {
    /// What the user can do.
    pub fn hint(&self) -> String {
        match self {
            Self::TooLong { .. } => "publish the ISOs under a shorter path (--publish-url)".into(),
            Self::Scheme { .. } => "serve the ISOs over http or https".into(),
            Self::NotIso { .. } => "publish the file under its own name, ending in .iso".into(),
            Self::Unreachable { .. } => {
                "upload the ISO there first; CloudStack's secondary storage must reach the same URL"
                    .into()
            }
            Self::Redirect { location, .. } => format!(
                "give the final URL ({location}) instead, or set the global setting \
                 store.download.follow.redirects=true in CloudStack"
            ),
            Self::Status { .. } => "upload the ISO to that URL first".into(),
            Self::Size { .. } => "the published copy is another file: upload this ISO again".into(),
        }
    }
}

/// The checks that need no network.
pub fn check_form(url: &str) -> Result<(), UrlError> {
    if url.chars().count() > MAX_URL {
        return Err(UrlError::TooLong {
            url: crate::fetch::redact(url),
            len: url.chars().count(),
        });
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| UrlError::Scheme {
        url: crate::fetch::redact(url),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Scheme {
            url: crate::fetch::redact(url),
        });
    }
    if !parsed.path().to_ascii_lowercase().ends_with(".iso") {
        return Err(UrlError::NotIso {
            url: crate::fetch::redact(url),
        });
    }
    Ok(())
}

/// `HEAD url` with `http` (a client that follows no redirect): 200 with `size` bytes.
pub async fn check_served(
    http: &reqwest::Client,
    url: &str,
    iso: &str,
    size: u64,
) -> Result<(), UrlError> {
    let response = http
        .head(url)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .map_err(|e| UrlError::Unreachable {
            url: crate::fetch::redact(url),
            reason: e.without_url().to_string(),
        })?;
    let status = response.status();
    if status.is_redirection() {
        return Err(UrlError::Redirect {
            url: crate::fetch::redact(url),
            status: status.as_u16(),
            location: response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map_or_else(|| "nowhere".to_owned(), crate::fetch::redact),
        });
    }
    if status.as_u16() != 200 {
        return Err(UrlError::Status {
            url: crate::fetch::redact(url),
            status: status.as_u16(),
        });
    }
    let length = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length != Some(size) {
        return Err(UrlError::Size {
            url: crate::fetch::redact(url),
            iso: iso.to_owned(),
            expected: size,
            actual: length.map_or("no Content-Length".into(), |l| l.to_string()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_checked_as_cloudstack_does() {
        check_form("https://files.example.org/cks/setup-v1.33.1-x86_64.iso").unwrap();
        let long = format!("https://f.example/{}.iso", "a".repeat(240));
        assert!(matches!(
            check_form(&long),
            Err(UrlError::TooLong { len: 262, .. })
        ));
        assert!(matches!(
            check_form("ftp://f/x.iso"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            check_form("https://f/x.img"),
            Err(UrlError::NotIso { .. })
        ));
        assert!(check_form("https://f/X.ISO?sig=1").is_ok());
    }

    #[test]
    fn a_redirect_hint_names_the_setting() {
        let e = UrlError::Redirect {
            url: "u".into(),
            status: 302,
            location: "https://cdn/x.iso".into(),
        };
        assert!(e.hint().contains("store.download.follow.redirects"));
    }
}
