//! The local stand-in for github.com's git smart HTTP (`test-world.md`).
//!
//! Real git, not a mock: [`Repo`] builds a bare repository with `git tag`, and [`GitServer`] serves
//! it on an ephemeral 127.0.0.1 port by running `git http-backend` as a CGI program for each
//! request. [`Mode`] bends the server the ways real servers differ (no protocol v2, discovery
//! with or without the `# service=` preamble) so both client paths meet real replies.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::server::{HttpServer, Incoming, Outgoing};

/// Fails the test, naming `make deps`, when git is not installed: never a silent skip.
pub fn require_git() {
    let found = Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "git is not installed; run `make deps` to install the test tools"
    );
}

/// A git command isolated from the user's and the system's configuration.
/// The date of every commit and tag the world makes: with it, the same tags are the same commits
/// in every world start, so a lock's `autoscaler-commit` from one start holds in the next.
const GIT_DATE: &str = "1700000000 +0000";

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", GIT_DATE)
        .env("GIT_COMMITTER_DATE", GIT_DATE)
        .args([
            "-c",
            "user.name=cks-iso tests",
            "-c",
            "user.email=tests@cks-iso.invalid",
        ]);
    cmd
}

fn run(mut cmd: Command) {
    let out = cmd.output().expect("run git");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A tag to create: its name and whether it is annotated.
#[derive(Debug, Clone, Copy)]
pub enum Tag<'a> {
    /// `git tag <name>`.
    Light(&'a str),
    /// `git tag -a -m <name> <name>`.
    Annotated(&'a str),
}

/// A bare repository in a temporary directory, under the project root a server exports.
pub struct Repo {
    dir: tempfile::TempDir,
    /// Its path below the project root, e.g. `kubernetes/autoscaler.git`.
    pub name: String,
}

impl Repo {
    /// Creates `name` with one commit carrying `tags`, plus a branch and a pull ref as noise.
    pub fn with_tags(name: &str, tags: &[Tag<'_>]) -> Self {
        require_git();
        let dir = tempfile::tempdir().expect("temp dir");
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        run({
            let mut c = git(&work);
            c.args(["init", "-q", "-b", "master"]);
            c
        });
        run({
            let mut c = git(&work);
            c.args(["commit", "-q", "--allow-empty", "-m", "init"]);
            c
        });
        for tag in tags {
            let mut c = git(&work);
            match tag {
                Tag::Light(t) => c.args(["tag", t]),
                Tag::Annotated(t) => c.args(["tag", "-a", "-m", t, t]),
            };
            run(c);
        }
        let bare = dir.path().join("root").join(name);
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        run({
            let mut c = git(dir.path());
            c.arg("clone").args(["-q", "--bare"]).arg(&work).arg(&bare);
            c
        });
        run({
            let mut c = git(&bare);
            c.args(["update-ref", "refs/pull/1/head", "HEAD"]);
            c
        });
        Self {
            dir,
            name: name.to_owned(),
        }
    }

    /// The directory a server exports (`GIT_PROJECT_ROOT`).
    pub fn project_root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
}

/// How the server departs from plain `git http-backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As git serves it: v2 when asked (discovery without preamble), v0 otherwise.
    Backend,
    /// Drops the `Git-Protocol` header, as servers that only speak v0 do.
    V0Only,
    /// v2 discovery preceded by `# service=git-upload-pack` and a flush, as GitHub sends it.
    PreambleAlways,
    /// v0 only, and the advertisement without the preamble.
    V0NoPreamble,
    /// v2, but `ref-prefix` arguments are dropped before git sees them, as a server may do.
    IgnoresRefPrefix,
    /// A plain web server: 200 text/plain for everything.
    Dumb,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `GET` or `POST`.
    pub method: String,
    /// Path and query.
    pub url: String,
    /// The `Git-Protocol` header, if sent.
    pub git_protocol: Option<String>,
}

/// `git http-backend` on 127.0.0.1, stopped on drop.
pub struct GitServer {
    /// Held for its drop, which stops it.
    _server: HttpServer,
    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub base: String,
    log: Arc<Mutex<Vec<Seen>>>,
}

impl GitServer {
    /// Serves `root` (a `GIT_PROJECT_ROOT`) bent as `mode`.
    pub fn start(root: PathBuf, mode: Mode) -> Self {
        require_git();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let server = HttpServer::start(move |request| handle(request, &root, mode, &seen));
        Self {
            base: format!("http://{}", server.host()),
            _server: server,
            log,
        }
    }

    /// The URL of `repo` on this server.
    pub fn url(&self, repo: &Repo) -> String {
        format!("{}/{}", self.base, repo.name)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

fn handle(request: Incoming, root: &Path, mode: Mode, log: &Mutex<Vec<Seen>>) -> Outgoing {
    let entry = Seen {
        method: request.method.clone(),
        url: request.target.clone(),
        git_protocol: request.header("Git-Protocol").map(str::to_owned),
    };
    log.lock().unwrap().push(entry.clone());
    match mode {
        Mode::Dumb => Outgoing::new(200, "<html>not git</html>").with("Content-Type", "text/plain"),
        _ => cgi(
            root,
            mode,
            &entry,
            request.header("Content-Type"),
            &request.body,
        ),
    }
}

const PREAMBLE: &[u8] = b"001e# service=git-upload-pack\n0000";

/// Runs `git http-backend` for one request and applies `mode` to its reply.
fn cgi(root: &Path, mode: Mode, seen: &Seen, content_type: Option<&str>, body: &[u8]) -> Outgoing {
    let (path, query) = seen.url.split_once('?').unwrap_or((&seen.url, ""));
    let mut cmd = git(root);
    cmd.arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &seen.method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type.unwrap_or_default())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let speaks_v2 = !matches!(mode, Mode::V0Only | Mode::V0NoPreamble);
    if let (true, Some(proto)) = (speaks_v2, &seen.git_protocol) {
        cmd.env("HTTP_GIT_PROTOCOL", proto);
    }
    let body = match mode {
        Mode::IgnoresRefPrefix => without_ref_prefix(body),
        _ => body.to_vec(),
    };
    cmd.env("CONTENT_LENGTH", body.len().to_string());
    let mut child = cmd.spawn().expect("spawn git http-backend");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&body).expect("write CGI body");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for git http-backend");
    let mut reply = parse_cgi(&out.stdout);
    if path.ends_with("/info/refs") && reply.status == 200 {
        let has = reply.body.starts_with(PREAMBLE);
        match mode {
            Mode::PreambleAlways if !has => reply.body = [PREAMBLE, &reply.body].concat(),
            Mode::V0NoPreamble if has => drop(reply.body.drain(..PREAMBLE.len())),
            _ => {}
        }
    }
    reply
}

/// A request body with its `ref-prefix` pkt-lines removed (lengths are 4 hex digits, `0000`–`0002`
/// are the special packets).
fn without_ref_prefix(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 4 {
        let len = usize::from_str_radix(std::str::from_utf8(&rest[..4]).unwrap(), 16).unwrap();
        let end = len.max(4);
        if !rest[4..end].starts_with(b"ref-prefix ") {
            out.extend_from_slice(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out
}

/// Splits a CGI reply into `Status`, headers and body.
fn parse_cgi(out: &[u8]) -> Outgoing {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            out.windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        })
        .expect("CGI reply without a header block");
    let head = String::from_utf8_lossy(&out[..split.0]);
    let mut status = 200;
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_owned();
        if name.eq_ignore_ascii_case("Status") {
            status = value
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .expect("CGI status");
        } else if !name.eq_ignore_ascii_case("Content-Length") {
            // The server frames the body itself.
            headers.push((name.to_owned(), value));
        }
    }
    Outgoing {
        status,
        headers,
        body: out[split.1..].to_vec(),
        length: None,
    }
}
