//! Lists a repository's tags the way `git ls-remote` does, over git's smart HTTP protocol.
//!
//! The autoscaler version comes from the tags of `kubernetes/autoscaler`; asking GitHub's API would
//! need a token and is rate-limited, cloning is far too big. `docs/reference/upstream.md` §1:
//! discovery with `Git-Protocol: version=2`; a v2 server then answers one `ls-refs` command with
//! `ref-prefix` and `peel` (a few KiB); a server that answers the discovery with a v0 advertisement
//! has already sent every ref, which is then used as is. The server may ignore `ref-prefix`, so
//! refs are filtered again here. No retries or mirrors: the caller passes its `reqwest::Client` and
//! the URL (already rewritten for a mirror); [`ls_remote`] is the only HTTP call site.

use super::ResolveError;
use super::pktline::{self, Packet, Reader};

const ADVERTISEMENT: &str = "application/x-git-upload-pack-advertisement";
const REQUEST: &str = "application/x-git-upload-pack-request";
/// A v0 advertisement of a big repository (GitHub adds every `refs/pull/*`) is a few MiB; more
/// than this is not a git server answering a listing.
const MAX_REPLY: usize = 64 << 20;

pub use cks_iso_domain::release::GitRef;

/// The git protocol version a listing was read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The original advertisement: every ref in the discovery reply.
    V0,
    /// `ls-refs` after a capability advertisement.
    V2,
}

/// Refs whose names start with a prefix, and how they were obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The protocol the server spoke.
    pub protocol: Protocol,
    /// Matching refs in the server's order.
    pub refs: Vec<GitRef>,
}

/// Lists the refs of `repo_url` whose names start with `prefix` (e.g. `refs/tags/cluster-autoscaler-`).
pub async fn ls_remote(
    client: &reqwest::Client,
    repo_url: &str,
    prefix: &str,
) -> Result<Listing, ResolveError> {
    let base = repo_url.trim_end_matches('/');
    let url = format!("{base}/info/refs?service=git-upload-pack");
    let req = client.get(&url).header("Git-Protocol", "version=2");
    let (content_type, body) = send(req, &url).await?;
    if content_type.as_deref() != Some(ADVERTISEMENT) {
        let reason = format!(
            "content type {:?} instead of {ADVERTISEMENT}",
            content_type.unwrap_or_default()
        );
        return Err(ResolveError::NotSmart {
            url,
            reason,
            attempts: 1,
        });
    }
    match parse_discovery(&body).map_err(|e| e.at(&url))? {
        Discovery::V0(refs) => Ok(Listing {
            protocol: Protocol::V0,
            refs: filter(refs, prefix),
        }),
        Discovery::V2 { ls_refs: false } => Err(ResolveError::Protocol {
            url,
            reason: "protocol v2 without the ls-refs command".into(),
            attempts: 1,
        }),
        Discovery::V2 { ls_refs: true } => {
            let url = format!("{base}/git-upload-pack");
            let req = client
                .post(&url)
                .header("Git-Protocol", "version=2")
                .header(reqwest::header::CONTENT_TYPE, REQUEST)
                .body(ls_refs_request(prefix));
            let (_, body) = send(req, &url).await?;
            let refs = parse_ls_refs(&body).map_err(|e| e.at(&url))?;
            Ok(Listing {
                protocol: Protocol::V2,
                refs: filter(refs, prefix),
            })
        }
    }
}

async fn send(
    req: reqwest::RequestBuilder,
    url: &str,
) -> Result<(Option<String>, Vec<u8>), ResolveError> {
    let http = |source: reqwest::Error| ResolveError::Http {
        url: url.to_owned(),
        source: source.without_url(),
        attempts: 1,
    };
    let resp = req.send().await.map_err(http)?;
    if !resp.status().is_success() {
        return Err(ResolveError::Status {
            url: url.to_owned(),
            status: resp.status(),
            attempts: 1,
        });
    }
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
    let mut resp = resp;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http)? {
        if body.len() + chunk.len() > MAX_REPLY {
            return Err(ResolveError::Protocol {
                url: url.to_owned(),
                reason: format!("the reply exceeds {} MiB", MAX_REPLY >> 20),
                attempts: 1,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok((content_type, body))
}

fn filter(refs: Vec<GitRef>, prefix: &str) -> Vec<GitRef> {
    refs.into_iter()
        .filter(|r| r.name.starts_with(prefix))
        .collect()
}

/// The body of an `ls-refs` command asking for peeled tags under `prefix`.
pub fn ls_refs_request(prefix: &str) -> Vec<u8> {
    let mut out = Vec::new();
    pktline::write_data(&mut out, b"command=ls-refs\n");
    pktline::write_data(
        &mut out,
        format!("agent=cks-iso/{}\n", env!("CARGO_PKG_VERSION")).as_bytes(),
    );
    pktline::write_delim(&mut out);
    pktline::write_data(&mut out, b"peel\n");
    pktline::write_data(&mut out, format!("ref-prefix {prefix}\n").as_bytes());
    pktline::write_flush(&mut out);
    out
}

/// What the discovery reply says.
#[derive(Debug, PartialEq, Eq)]
pub enum Discovery {
    /// A v0 (or v1) advertisement with every ref, `^{}` entries folded into `peeled`.
    V0(Vec<GitRef>),
    /// A v2 capability list.
    V2 {
        /// Whether `ls-refs` is offered.
        ls_refs: bool,
    },
}

/// A parse failure before it is given the URL.
#[derive(Debug)]
pub enum ParseError {
    /// Bad framing.
    Frame(pktline::PktLineError),
    /// Good framing, wrong content.
    Content(String),
}

impl ParseError {
    fn at(self, url: &str) -> ResolveError {
        let url = url.to_owned();
        match self {
            Self::Frame(source) => ResolveError::PktLine {
                url,
                source,
                attempts: 1,
            },
            Self::Content(reason) => ResolveError::Protocol {
                url,
                reason,
                attempts: 1,
            },
        }
    }
}

impl From<pktline::PktLineError> for ParseError {
    fn from(e: pktline::PktLineError) -> Self {
        Self::Frame(e)
    }
}

/// A packet as a line of text; an `ERR` packet becomes the server's message as an error.
fn text<'a>(packet: &Packet<'a>) -> Result<Option<&'a str>, ParseError> {
    let line = packet
        .line()
        .transpose()
        .map_err(|_| ParseError::Content("a line is not UTF-8".into()))?;
    match line.and_then(|l| l.strip_prefix("ERR ")) {
        Some(message) => Err(ParseError::Content(format!("the server said: {message}"))),
        None => Ok(line),
    }
}

/// Reads a discovery reply, with or without the `# service=git-upload-pack` preamble.
pub fn parse_discovery(body: &[u8]) -> Result<Discovery, ParseError> {
    let mut reader = Reader::new(body);
    let start = reader.clone();
    let preamble = match reader.next_packet()? {
        Some(p) => text(&p)?.filter(|l| l.starts_with("# service=")),
        None => None,
    };
    match preamble {
        Some("# service=git-upload-pack") => {
            if reader.next_packet()? != Some(Packet::Flush) {
                return Err(ParseError::Content(
                    "no flush after the service preamble".into(),
                ));
            }
        }
        Some(other) => {
            return Err(ParseError::Content(format!(
                "unexpected preamble {other:?}"
            )));
        }
        None => reader = start,
    }
    let before_version = reader.clone();
    let version = match reader.next_packet()? {
        Some(p) => text(&p)?,
        None => None,
    };
    match version {
        Some("version 2") => {
            let mut ls_refs = false;
            while let Some(p) = reader.next_packet()? {
                match text(&p)? {
                    Some(cap) => ls_refs |= cap == "ls-refs" || cap.starts_with("ls-refs="),
                    None => break,
                }
            }
            Ok(Discovery::V2 { ls_refs })
        }
        Some("version 1") => parse_advertisement(reader).map(Discovery::V0),
        _ => parse_advertisement(before_version).map(Discovery::V0),
    }
}

/// A v0 advertisement: `<oid> <name>\0<caps>` first, `<oid> <name>` after, until a flush.
fn parse_advertisement(mut reader: Reader<'_>) -> Result<Vec<GitRef>, ParseError> {
    let mut refs: Vec<GitRef> = Vec::new();
    while let Some(p) = reader.next_packet()? {
        let Some(line) = text(&p)? else { break };
        let line = line.split('\0').next().unwrap_or(line);
        let (oid, name) = split_ref(line)?;
        if name == "capabilities^{}" {
            continue; // An empty repository advertises only its capabilities.
        }
        match name.strip_suffix("^{}") {
            Some(base) => match refs.last_mut() {
                Some(last) if last.name == base => last.peeled = Some(oid.to_owned()),
                _ => {
                    return Err(ParseError::Content(format!(
                        "{name} does not follow {base}"
                    )));
                }
            },
            None => refs.push(GitRef {
                name: name.to_owned(),
                oid: oid.to_owned(),
                peeled: None,
            }),
        }
    }
    Ok(refs)
}

/// An `ls-refs` reply: `<oid> <name>[ symref-target:<t>][ peeled:<oid>]` lines until a flush.
pub fn parse_ls_refs(body: &[u8]) -> Result<Vec<GitRef>, ParseError> {
    let mut reader = Reader::new(body);
    let mut refs = Vec::new();
    while let Some(p) = reader.next_packet()? {
        let Some(line) = text(&p)? else { break };
        let (oid, name) = split_ref(line)?;
        let attributes = line.split(' ').skip(2);
        let peeled = attributes
            .filter_map(|w| w.strip_prefix("peeled:"))
            .next()
            .map(str::to_owned);
        refs.push(GitRef {
            name: name.to_owned(),
            oid: oid.to_owned(),
            peeled,
        });
    }
    Ok(refs)
}

fn split_ref(line: &str) -> Result<(&str, &str), ParseError> {
    let mut words = line.split(' ');
    match (words.next(), words.next()) {
        (Some(oid), Some(name)) if is_oid(oid) && !name.is_empty() => Ok((oid, name)),
        _ => Err(ParseError::Content(format!("not a ref line: {line:?}"))),
    }
}

fn is_oid(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn pkts(lines: &[Option<&str>]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines {
            match l {
                Some(l) => pktline::write_data(&mut out, l.as_bytes()),
                None => pktline::write_flush(&mut out),
            }
        }
        out
    }

    #[test]
    fn v2_capabilities_are_read_with_and_without_preamble() {
        let caps = [
            Some("version 2\n"),
            Some("agent=git/2\n"),
            Some("ls-refs=unborn\n"),
            None,
        ];
        assert_eq!(
            parse_discovery(&pkts(&caps)).unwrap(),
            Discovery::V2 { ls_refs: true }
        );
        let mut with = pkts(&[Some("# service=git-upload-pack\n"), None]);
        with.extend(pkts(&caps));
        assert_eq!(
            parse_discovery(&with).unwrap(),
            Discovery::V2 { ls_refs: true }
        );
    }

    #[test]
    fn v0_advertisement_folds_peeled_entries_with_and_without_preamble() {
        let first = format!("{A} HEAD\0multi_ack side-band-64k\n");
        let tag = format!("{A} refs/tags/t1\n");
        let peeled = format!("{B} refs/tags/t1^{{}}");
        let body = [
            Some(first.as_str()),
            Some(tag.as_str()),
            Some(peeled.as_str()),
            None,
        ];
        let want = Discovery::V0(vec![
            GitRef {
                name: "HEAD".into(),
                oid: A.into(),
                peeled: None,
            },
            GitRef {
                name: "refs/tags/t1".into(),
                oid: A.into(),
                peeled: Some(B.into()),
            },
        ]);
        assert_eq!(parse_discovery(&pkts(&body)).unwrap(), want);
        let mut with = pkts(&[Some("# service=git-upload-pack\n"), None]);
        with.extend(pkts(&body));
        assert_eq!(parse_discovery(&with).unwrap(), want);
    }

    #[test]
    fn empty_repository_advertises_no_refs() {
        let line = format!("{} capabilities^{{}}\0agent=git/2\n", "0".repeat(40));
        assert_eq!(
            parse_discovery(&pkts(&[Some(&line), None])).unwrap(),
            Discovery::V0(vec![])
        );
    }

    #[test]
    fn ls_refs_reply_reads_peeled_and_symref_attributes() {
        let l1 = format!("{A} HEAD symref-target:refs/heads/main\n");
        let l2 = format!("{A} refs/tags/t1 peeled:{B}\n");
        let refs = parse_ls_refs(&pkts(&[Some(&l1), Some(&l2), None])).unwrap();
        assert_eq!(refs[0].peeled, None);
        assert_eq!(refs[1].peeled.as_deref(), Some(B));
    }

    #[test]
    fn garbage_lines_are_protocol_errors() {
        assert!(matches!(
            parse_ls_refs(&pkts(&[Some("hello\n")])),
            Err(ParseError::Content(_))
        ));
        assert!(matches!(
            parse_discovery(b"zzzz"),
            Err(ParseError::Frame(_))
        ));
        let orphan = format!("{B} refs/tags/t1^{{}}\n");
        assert!(parse_discovery(&pkts(&[Some(&orphan), None])).is_err());
    }

    #[test]
    fn err_packets_carry_the_servers_message() {
        let err = parse_discovery(&pkts(&[Some("ERR access denied\n")])).unwrap_err();
        assert!(
            matches!(&err, ParseError::Content(m) if m.contains("access denied")),
            "{err:?}"
        );
    }

    #[test]
    fn ls_refs_request_asks_for_peeled_refs_under_the_prefix() {
        let body = ls_refs_request("refs/tags/x-");
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with("0014command=ls-refs\n"), "{text}");
        assert!(text.contains("00010009peel\n"), "{text}");
        assert!(
            text.ends_with("001cref-prefix refs/tags/x-\n0000"),
            "{text}"
        );
    }
}
