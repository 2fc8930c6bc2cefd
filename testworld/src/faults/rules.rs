//! What the proxy does to which request: the [`Fault`]s, the [`Rule`]s that pick requests for
//! them, and the [`LoggedRequest`]s it keeps (see the module above for the API).

use std::time::Duration;

use crate::http::header;

/// What to do to a matching request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status (e.g. 500, 502, 503) and a short text body; upstream is not asked.
    Status(u16),
    /// Answer `429 Too Many Requests` with `Retry-After: <seconds>`; upstream is not asked.
    TooManyRequests {
        /// The `Retry-After` value in seconds.
        retry_after: u32,
    },
    /// Send the upstream's headers and the first `after` body bytes, then reset the connection
    /// (TCP RST, via `SO_LINGER` 0).
    ResetAfter {
        /// Body bytes sent before the reset.
        after: usize,
    },
    /// Send the upstream's headers (with the full `Content-Length`) and the first `after` body
    /// bytes, then close the connection cleanly (FIN): a body cut short without a transport error.
    Truncate {
        /// Body bytes sent before closing.
        after: usize,
    },
    /// Pass the upstream's answer with the body byte at `offset` inverted (bit-flipped).
    FlipByte {
        /// Index into the body; past the end, nothing is flipped.
        offset: usize,
    },
    /// Send the headers and `after` body bytes, then say nothing for `pause`, then close.
    Stall {
        /// Body bytes sent before going silent.
        after: usize,
        /// How long to stay silent (make it longer than the client's idle timeout).
        pause: Duration,
    },
    /// Answer `302` with `Location` pointing at the same path again, forever.
    RedirectLoop,
    /// Answer `302` with this `Location`; upstream is not asked.
    Redirect(String),
    /// Answer `200 OK` with this `Content-Type`, these extra headers and this body; upstream is
    /// not asked: an API the world's registry lacks, such as a Referrers API answering in pages
    /// (`Link: <…>; rel="next"`, distribution spec 1.1).
    Reply {
        /// The `Content-Type`.
        content_type: String,
        /// More headers (`link`).
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// Answer `200 OK`, `Content-Type: text/html`, with an HTML error page (as captive portals and
    /// misconfigured mirrors do); upstream is not asked.
    HtmlOk,
    /// Forward the request without its `Range` header: the whole body comes back with `200`.
    IgnoreRange,
    /// A `Range` request gets `206` with a `Content-Range` one byte later than asked (and the
    /// bytes of that range); other requests pass through.
    WrongContentRange,
    /// A `Range` request gets `400 Bad Request`; other requests pass through.
    RangeRejected,
    /// Send the upstream's status and headers without `Content-Length`, its body, then zero
    /// bytes without end (until the client hangs up): a lying or endless body. Every body byte
    /// sent is counted ([`super::FaultProxy::endless_bytes`]).
    Endless,
    /// Pass the answer through, `chunk` body bytes at a time with `pause` between them.
    Trickle {
        /// Bytes per write.
        chunk: usize,
        /// Silence between writes (shorter than the client's idle timeout).
        pause: Duration,
    },
}

impl Fault {
    /// A short name, as the log and a chaos tally show it.
    pub fn name(&self) -> String {
        match self {
            Fault::Status(code) => format!("status {code}"),
            Fault::TooManyRequests { retry_after } => format!("429 retry-after {retry_after}"),
            Fault::ResetAfter { after } => format!("reset after {after}"),
            Fault::Truncate { after } => format!("truncate after {after}"),
            Fault::FlipByte { offset } => format!("flip byte {offset}"),
            Fault::Stall { after, pause } => format!("stall after {after} for {pause:?}"),
            Fault::RedirectLoop => "redirect loop".into(),
            Fault::Redirect(to) => format!("redirect to {to}"),
            Fault::Reply { content_type, .. } => format!("reply {content_type}"),
            Fault::HtmlOk => "html 200".into(),
            Fault::IgnoreRange => "range ignored".into(),
            Fault::WrongContentRange => "wrong content-range".into(),
            Fault::RangeRejected => "400 on range".into(),
            Fault::Trickle { chunk, pause } => format!("trickle {chunk} per {pause:?}"),
            Fault::Endless => "endless body".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Matcher {
    Any,
    Contains(String),
    Regex(regex::Regex),
}

impl Matcher {
    pub(super) fn matches(&self, path: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Contains(s) => path.contains(s.as_str()),
            Matcher::Regex(re) => re.is_match(path),
        }
    }
}

/// Which requests get a fault, how many times, and which fault.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(super) matcher: Matcher,
    pub(super) method: Option<String>,
    pub(super) remaining: Option<usize>,
    pub(super) fault: Fault,
}

impl Rule {
    /// Matches every request.
    pub fn any() -> Self {
        Self::with(Matcher::Any)
    }

    /// Matches requests whose path (query included) contains `needle`.
    pub fn path_contains(needle: &str) -> Self {
        Self::with(Matcher::Contains(needle.to_owned()))
    }

    /// Matches requests whose path (query included) matches the regular expression.
    ///
    /// # Panics
    /// When `pattern` is not a valid regular expression.
    pub fn path_regex(pattern: &str) -> Self {
        Self::with(Matcher::Regex(
            regex::Regex::new(pattern).expect("valid regex"),
        ))
    }

    fn with(matcher: Matcher) -> Self {
        Self {
            matcher,
            method: None,
            remaining: None,
            fault: Fault::Status(500),
        }
    }

    /// Only requests with this method (e.g. `"GET"`, `"HEAD"`).
    pub fn method(mut self, method: &str) -> Self {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Applies to the first `n` matching requests only, then they pass through.
    pub fn times(mut self, n: usize) -> Self {
        self.remaining = Some(n);
        self
    }

    /// The fault to apply (the default is `Status(500)`).
    pub fn fault(mut self, fault: Fault) -> Self {
        self.fault = fault;
        self
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// `GET`, `HEAD`, `POST`, …
    pub method: String,
    /// The path as sent to the proxy, query included.
    pub path: String,
    /// Request headers in the order sent, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The fault applied, described (`None` for pass-through).
    pub fault: Option<String>,
}

impl LoggedRequest {
    /// The value of header `name` (case-insensitive), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Whether an `Authorization` header was sent.
    pub fn has_authorization(&self) -> bool {
        self.header("authorization").is_some()
    }

    /// The `Range` header, if sent.
    pub fn range(&self) -> Option<&str> {
        self.header("range")
    }
}
