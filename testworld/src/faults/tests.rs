use super::*;
use std::io::Read;

/// A one-shot upstream written on std so these tests need nothing else.
fn upstream(body: &'static [u8]) -> (String, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/base", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut heads = Vec::new();
        for stream in listener.incoming().take(1) {
            let stream = stream.unwrap();
            let mut reader = BufReader::new(&stream);
            let (first, headers) = read_head(&mut reader).unwrap();
            heads.push(first);
            heads.extend(headers.into_iter().map(|(n, v)| format!("{n}: {v}")));
            let mut out = &stream;
            write!(
                out,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
                body.len()
            )
            .unwrap();
            out.write_all(body).unwrap();
            out.write_all(b"\r\n0\r\n\r\n").unwrap();
        }
        heads
    });
    (url, handle)
}

fn raw_get(url: &str, extra: &str) -> Vec<u8> {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut conn = TcpStream::connect(authority).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\n{extra}\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = conn.read_to_end(&mut out);
    out
}

#[test]
fn pass_through_keeps_range_and_path_and_reframes_chunked_bodies() {
    let (base, server) = upstream(b"hello world");
    let proxy = FaultProxy::start(&base);
    let reply = raw_get(&format!("{}/a/b?x=1", proxy.url()), "Range: bytes=3-\r\n");
    let reply = String::from_utf8(reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains("content-length: 11"), "{reply}");
    assert!(reply.ends_with("hello world"), "{reply}");
    let seen = server.join().unwrap();
    assert_eq!(seen[0], "GET /base/a/b?x=1 HTTP/1.1");
    assert!(seen.contains(&"range: bytes=3-".to_string()), "{seen:?}");
    let log = proxy.log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].range(), Some("bytes=3-"));
    assert!(!log[0].has_authorization());
    assert!(log[0].fault.is_none());
}

#[test]
fn rules_apply_the_given_number_of_times_then_pass_through() {
    let (base, _server) = upstream(b"payload");
    let proxy = FaultProxy::start(&base);
    proxy.add(
        Rule::path_regex(r"^/f$")
            .times(2)
            .fault(Fault::TooManyRequests { retry_after: 1 }),
    );
    for _ in 0..2 {
        let reply = String::from_utf8(raw_get(&format!("{}/f", proxy.url()), "")).unwrap();
        assert!(reply.starts_with("HTTP/1.1 429"), "{reply}");
        assert!(reply.contains("retry-after: 1"), "{reply}");
    }
    let reply = String::from_utf8(raw_get(&format!("{}/f", proxy.url()), "")).unwrap();
    assert!(reply.ends_with("payload"), "{reply}");
    let faults: Vec<_> = proxy.log().into_iter().map(|r| r.fault).collect();
    assert_eq!(faults.iter().filter(|f| f.is_some()).count(), 2);
}

#[test]
fn truncation_declares_the_full_length_and_sends_less() {
    let (base, _server) = upstream(b"0123456789");
    let proxy = FaultProxy::start(&base);
    proxy.add(Rule::any().fault(Fault::Truncate { after: 4 }));
    let reply = String::from_utf8(raw_get(&format!("{}/t", proxy.url()), "")).unwrap();
    assert!(reply.contains("content-length: 10"), "{reply}");
    assert!(reply.ends_with("\r\n\r\n0123"), "{reply}");
}

/// An upstream answering each of `n` requests with `reply` verbatim.
fn raw_upstream(reply: String, n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/base", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let stream = stream.unwrap();
            let _ = read_head(&mut BufReader::new(&stream)).unwrap();
            (&stream).write_all(reply.as_bytes()).unwrap();
        }
    });
    url
}

fn raw(url: &str, method: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut conn = TcpStream::connect(authority).unwrap();
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = conn.read_to_string(&mut out);
    out
}

#[test]
fn head_answers_keep_the_upstream_content_length() {
    let base = raw_upstream(
        "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nDocker-Content-Digest: sha256:ab\r\n\r\n"
            .into(),
        1,
    );
    let proxy = FaultProxy::start(&base);
    let reply = raw(&format!("{}/v2/x/manifests/y", proxy.url()), "HEAD");
    assert!(reply.contains("content-length: 1234\r\n"), "{reply}");
    assert!(
        reply.contains("docker-content-digest: sha256:ab"),
        "{reply}"
    );
    assert_eq!(reply.matches("content-length").count(), 1, "{reply}");
}

#[test]
fn redirects_pass_unchanged_unless_rewriting_is_asked_for() {
    // The upstream redirects into itself.
    let probe = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = probe.local_addr().unwrap();
    let base = format!("http://{up}/base");
    let reply = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{up}/base/blobs/1\r\nContent-Length: 0\r\n\r\n"
    );
    std::thread::spawn(move || {
        for stream in probe.incoming().take(2) {
            let stream = stream.unwrap();
            let _ = read_head(&mut BufReader::new(&stream)).unwrap();
            (&stream).write_all(reply.as_bytes()).unwrap();
        }
    });
    let proxy = FaultProxy::start(&base);
    let plain = raw(&format!("{}/blob", proxy.url()), "GET");
    assert!(
        plain.contains(&format!("location: http://{up}/base/blobs/1")),
        "{plain}"
    );
    proxy.rewrite_redirects(true);
    let rewritten = raw(&format!("{}/blob", proxy.url()), "GET");
    assert!(
        rewritten.contains(&format!("location: {}/blobs/1", proxy.url())),
        "{rewritten}"
    );
}

#[test]
fn flipped_byte_changes_exactly_one_byte() {
    let (base, _server) = upstream(b"aaaa");
    let proxy = FaultProxy::start(&base);
    proxy.add(Rule::any().fault(Fault::FlipByte { offset: 2 }));
    let reply = raw_get(&format!("{}/x", proxy.url()), "");
    assert_eq!(&reply[reply.len() - 4..], &[b'a', b'a', !b'a', b'a']);
}
