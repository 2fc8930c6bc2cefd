//! A stand-in for the CloudStack management server's API, the part the Kubernetes service's
//! supported versions use, because no CloudStack can run here. Its own code (not cks-iso's), and
//! proven against the Python `cs` client before cks-iso is judged by it (tests/it/cloudstack/registration.rs,
//! `scripts/cs-calls.py`). Each answer follows a file of apache/cloudstack, read field by field:
//!
//! - the signature check — `server/src/main/java/com/cloud/api/ApiServer.java`
//!   (`verifyRequest`): parameters sorted by name as sent, values re-encoded as
//!   `java.net.URLEncoder` does (`~` → `%7E`, space → `%20`), lower-cased, HMAC-SHA1, Base64;
//!   `signatureversion=3` needs an `expires` in the future (and, with `enforce_timestamps`, at
//!   most 15 minutes ahead and always present); a failed check, an unknown command or a
//!   Kubernetes command while the service is disabled answer 401;
//! - the envelopes `{"<command>response": …}`, an empty list as `{}`, and the errors (HTTP status
//!   = `errorcode` 431/530, with `cserrorcode` and `errortext`) — `server/src/main/java/com/cloud/
//!   api/ApiServer.java` and `api/src/main/java/org/apache/cloudstack/api/response/
//!   ExceptionResponse.java`;
//! - `listCapabilities` — `server/src/main/java/com/cloud/server/ManagementServerImpl.java`
//!   (`listCapabilities`) and `api/.../response/CapabilitiesResponse.java`;
//! - `listKubernetesSupportedVersions`, `addKubernetesSupportedVersion`,
//!   `updateKubernetesSupportedVersion`, `deleteKubernetesSupportedVersion` — `plugins/
//!   integrations/kubernetes-service/src/main/java/com/cloud/kubernetes/version/
//!   KubernetesVersionManagerImpl.java` (checks, messages, the default name `v<semver>[-zone]`,
//!   the ISO named `<name>-Kubernetes-Binaries-ISO`, the response built by
//!   `createKubernetesSupportedVersionResponse`: `supportsha` from 1.16.0, `supportsautoscaling`
//!   by string comparison with "1.15.0", `isostate` the template's state) and its fields' names
//!   from `…/api/response/KubernetesSupportedVersionResponse.java`; `arch` only from 4.20.1;
//!   the delete an async job whose failure (a cluster uses the version) `queryAsyncJobResult`
//!   reports with `jobstatus` 2 and 530, its `jobresult` the `ExceptionResponse` (`uuidList`,
//!   `errorcode`, `errortext`, no `cserrorcode`) that `server/src/main/java/com/cloud/api/
//!   ApiAsyncJobDispatcher.java` stores for a failed job;
//! - `listIsos` — `server/src/main/java/com/cloud/api/query/dao/TemplateJoinDaoImpl.java`
//!   (`newIsoResponse`): one row per zone, `isready` from the zone's copy, `status` from
//!   `getTemplateStatus` ("Successfully Installed", "N% Downloaded", or the storage's error text),
//!   and the `checksum` through `utils/src/main/java/org/apache/cloudstack/utils/security/
//!   DigestHelper.java` `getHashValueFromChecksumValue`, which strips `{SHA-256}`: the bare hex
//!   ([`Options::list_stored_checksum`] answers the stored value, as older releases did); the
//!   owner filled by `server/.../api/ApiResponseHelper.java` `populateOwner` (the system account);
//! - `listKubernetesClusters` — `plugins/integrations/kubernetes-service/.../cluster/
//!   KubernetesClusterManagerImpl.java` (`listKubernetesClusters`), the cluster's
//!   `kubernetesversionid`, and who is listed by `server/src/main/java/com/cloud/user/
//!   AccountManagerImpl.java` `buildACLSearchParameters` (`Project.ListProjectResourcesCriteria`):
//!   without `projectid` project-owned clusters are skipped (`SkipProjectResources`), with
//!   `projectid=-1` only they are listed (`ListProjectResourcesOnly`), with a project's id only
//!   that project's; the delete's check (`listAllByKubernetesVersion`) sees them all;
//! - the per-zone download (`download.rs`) — `services/secondary-storage/.../
//!   DownloadManagerImpl.java` and `core/.../HttpTemplateDownloader.java`: a GET of the URL that
//!   follows no redirect, ISO 9660 checked, the `{SHA-256}` checksum compared as a string, the
//!   copy `Ready` or back in `Allocated` with the status text.

mod commands;
mod download;
mod files;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

pub use files::IsoHost;

use crate::http;
use crate::server::{HttpServer, Incoming, Outgoing};

/// What the stand-in is.
#[derive(Debug, Clone)]
pub struct Options {
    /// `cloudstackversion`, e.g. `4.22.0.0`; `arch` is a parameter from 4.20.1 on.
    pub version: String,
    /// `cloud.kubernetes.service.enabled`.
    pub kubernetes_enabled: bool,
    /// Zone names.
    pub zones: Vec<String>,
    /// The one user's API key.
    pub api_key: String,
    /// Its secret key.
    pub secret_key: String,
    /// `enforce.post.requests.and.timestamps` (4.21+): signature v3 with `expires` required.
    pub enforce_timestamps: bool,
    /// Milliseconds each download step takes (a zone goes Creating → N% → Ready).
    pub step_ms: u64,
    /// `listIsos` answers the stored `{SHA-256}hex` as releases before the algorithm was stripped
    /// did, instead of the bare hex current releases answer.
    pub list_stored_checksum: bool,
    /// Fault: `listIsos` reports this checksum for every ISO, whatever was registered (a record
    /// changed behind cks-iso's back).
    pub reported_checksum: Option<String>,
    /// Fault: `deleteKubernetesSupportedVersion`'s job stays pending for ever.
    pub job_never_ends: bool,
    /// Fault: `listKubernetesSupportedVersions` answers every page full (`pagesize` made-up
    /// versions) with a `count` one page beyond the page asked for: paging without end.
    pub endless_pages: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            version: "4.22.0.0".into(),
            kubernetes_enabled: true,
            zones: vec!["zone-a".into(), "zone-b".into()],
            api_key: "world-api-key_-0123456789".into(),
            secret_key: "world-secret-key_-9876543210".into(),
            enforce_timestamps: true,
            step_ms: 100,
            list_stored_checksum: false,
            reported_checksum: None,
            job_never_ends: false,
            endless_pages: false,
        }
    }
}

/// One request as received, without its signature.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET` or `POST`.
    pub method: String,
    /// The `command` parameter.
    pub command: String,
    /// Every parameter but `signature`, as decoded.
    pub params: BTreeMap<String, String>,
    /// The HTTP status answered.
    pub status: u16,
}

/// One zone's copy of a registered ISO.
#[derive(Debug, Clone)]
pub(crate) struct ZoneCopy {
    pub(crate) zone: usize,
    pub(crate) state: String,
    pub(crate) status: String,
}

/// A registered ISO (a template of format ISO).
#[derive(Debug, Clone)]
pub(crate) struct Iso {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) checksum: String,
    pub(crate) copies: Vec<ZoneCopy>,
}

impl Iso {
    /// The template's state: Ready when every zone is, Allocated when one failed.
    pub(crate) fn state(&self) -> &str {
        if self.copies.iter().any(|c| c.state == "Allocated") {
            "Allocated"
        } else if !self.copies.is_empty() && self.copies.iter().all(|c| c.state == "Ready") {
            "Ready"
        } else {
            "Creating"
        }
    }
}

/// A supported version.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) semver: String,
    pub(crate) arch: String,
    pub(crate) state: String,
    pub(crate) iso: String,
    pub(crate) zone: Option<usize>,
    pub(crate) min_cpu: u32,
    pub(crate) min_memory: u32,
}

/// A Kubernetes cluster: its id, name, the version it runs, and the project owning it (`None`: an
/// account's own).
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) project: Option<String>,
}

/// An async job.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) cmd: String,
    pub(crate) polls_left: u32,
    pub(crate) result: JobResult,
}

/// How an async job ends.
#[derive(Debug, Clone)]
pub(crate) enum JobResult {
    /// `jobstatus` 1.
    Succeeded,
    /// `jobstatus` 2, with its `errortext`.
    Failed(String),
}

/// Everything the server holds.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) next: u64,
    pub(crate) versions: Vec<Version>,
    pub(crate) isos: Vec<Iso>,
    pub(crate) clusters: Vec<Cluster>,
    pub(crate) jobs: BTreeMap<String, Job>,
    pub(crate) seen: Vec<Seen>,
}

impl State {
    /// A fresh UUID-shaped id.
    pub(crate) fn id(&mut self, kind: u16) -> String {
        self.next += 1;
        format!("{kind:08x}-0000-4000-8000-{:012x}", self.next)
    }
}

/// The running stand-in; stops when dropped.
pub struct CloudStackServer {
    server: HttpServer,
    pub(crate) state: Arc<Mutex<State>>,
    options: Options,
}

impl CloudStackServer {
    /// Starts it on an ephemeral loopback port.
    pub fn start(options: Options) -> Self {
        let state: Arc<Mutex<State>> = Arc::default();
        let server = {
            let (state, options) = (state.clone(), options.clone());
            HttpServer::start(move |request| handle(&state, &options, &request))
        };
        Self {
            server,
            state,
            options,
        }
    }

    /// `http://127.0.0.1:<port>/client/api`.
    pub fn endpoint(&self) -> String {
        format!("http://{}/client/api", self.server.host())
    }

    /// The options it runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The zones' ids, in order.
    pub fn zone_ids(&self) -> Vec<String> {
        (0..self.options.zones.len()).map(zone_id).collect()
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The commands received so far, in order.
    pub fn commands(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.command).collect()
    }

    /// Forgets the requests seen so far.
    pub fn clear_seen(&self) {
        self.state.lock().unwrap().seen.clear();
    }

    /// A Kubernetes cluster that runs version `version_id` (so deleting it fails).
    pub fn add_cluster(&self, name: &str, version_id: &str) -> String {
        self.add_cluster_in(name, version_id, None)
    }

    /// A cluster owned by the project `project` (listed only with `projectid`), or by an account.
    pub fn add_cluster_in(&self, name: &str, version_id: &str, project: Option<&str>) -> String {
        let mut state = self.state.lock().unwrap();
        let id = state.id(0xc1);
        state.clusters.push(Cluster {
            id: id.clone(),
            name: name.to_owned(),
            version: version_id.to_owned(),
            project: project.map(str::to_owned),
        });
        id
    }

    /// Every version as `listKubernetesSupportedVersions` would show it, with its ISO's
    /// checksum and url: `(name, semver, arch, state, isostate, checksum, url, id)`.
    pub fn versions(&self) -> Vec<BTreeMap<String, String>> {
        let state = self.state.lock().unwrap();
        state
            .versions
            .iter()
            .map(|v| {
                let iso = state.isos.iter().find(|i| i.id == v.iso);
                BTreeMap::from([
                    ("id".to_owned(), v.id.clone()),
                    ("name".to_owned(), v.name.clone()),
                    ("semanticversion".to_owned(), v.semver.clone()),
                    ("arch".to_owned(), v.arch.clone()),
                    ("state".to_owned(), v.state.clone()),
                    (
                        "isostate".to_owned(),
                        iso.map(|i| i.state().to_owned()).unwrap_or_default(),
                    ),
                    (
                        "checksum".to_owned(),
                        iso.map(|i| i.checksum.clone()).unwrap_or_default(),
                    ),
                    (
                        "url".to_owned(),
                        iso.map(|i| i.url.clone()).unwrap_or_default(),
                    ),
                ])
            })
            .collect()
    }
}

pub(crate) fn zone_id(i: usize) -> String {
    format!("2a0e{i:04x}-0000-4000-8000-00000000000{i}")
}

/// Whether `version` (`4.20.1.0`) is at least `want`.
pub(crate) fn at_least(version: &str, want: (u32, u32, u32)) -> bool {
    let p: Vec<u32> = version.split('.').map_while(|p| p.parse().ok()).collect();
    let at = |i: usize| p.get(i).copied().unwrap_or(0);
    (at(0), at(1), at(2)) >= want
}

/// `application/x-www-form-urlencoded` decoding, as the servlet container does (`+` is space).
pub fn form_decode(text: &str) -> BTreeMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `URLEncoder.encode(value, "UTF-8")` with `+` then replaced by `%20`, as `verifyRequest` does.
pub fn java_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                (b as char).to_string()
            }
            b' ' => "%20".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The signature `verifyRequest` computes for `params` (which must not hold `signature`).
pub fn expected_signature(params: &BTreeMap<String, String>, secret: &str) -> String {
    // BTreeMap orders by bytes, which is Collections.sort's order for ASCII names.
    let text = params
        .iter()
        .map(|(k, v)| format!("{k}={}", java_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
        .to_lowercase();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.as_bytes());
    http::base64(ring::hmac::sign(&key, text.as_bytes()).as_ref())
}

/// `yyyy-MM-dd'T'HH:mm:ssZ` (offset `+hhmm`) → seconds since 1970.
pub(crate) fn parse_expires(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let month = time::Month::try_from(u8::try_from(n(5..7)?).ok()?).ok()?;
    let date = time::Date::from_calendar_date(
        i32::try_from(n(0..4)?).ok()?,
        month,
        u8::try_from(n(8..10)?).ok()?,
    )
    .ok()?;
    let clock = time::Time::from_hms(
        u8::try_from(n(11..13)?).ok()?,
        u8::try_from(n(14..16)?).ok()?,
        u8::try_from(n(17..19)?).ok()?,
    )
    .ok()?;
    let sign = match b[19] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let offset = sign * (n(20..22)? * 3600 + n(22..24)? * 60);
    Some(date.with_time(clock).assume_utc().unix_timestamp() - offset)
}

/// A CloudStack error: HTTP status `code`, the same `errorcode`.
pub(crate) fn error(command: &str, code: u16, cs: u32, text: &str) -> Outgoing {
    let body = json!({
        format!("{}response", command.to_ascii_lowercase()): {
            "uuidList": [], "errorcode": code, "cserrorcode": cs, "errortext": text,
        }
    });
    reply(code, &body)
}

pub(crate) fn reply(status: u16, body: &Value) -> Outgoing {
    Outgoing::new(status, body.to_string()).with("Content-Type", "application/json; charset=UTF-8")
}

const UNAUTHORIZED: &str = "unable to verify user credentials and/or request signature";

fn handle(state: &Arc<Mutex<State>>, options: &Options, request: &Incoming) -> Outgoing {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    if path != "/client/api" {
        return Outgoing::new(404, "Not Found");
    }
    let mut params = form_decode(query);
    let form = request
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    if request.method == "POST" && form {
        params.extend(form_decode(&String::from_utf8_lossy(&request.body)));
    }
    let signature = params.remove("signature");
    let command = params.get("command").cloned().unwrap_or_default();
    let answer = match verify(options, &params, signature.as_deref(), &command) {
        Err(text) => error(&command, 401, 9999, text),
        Ok(()) => commands::run(state, options, &command, &params),
    };
    state.lock().unwrap().seen.push(Seen {
        method: request.method.clone(),
        command,
        params,
        status: answer.status,
    });
    answer
}

fn verify(
    options: &Options,
    params: &BTreeMap<String, String>,
    signature: Option<&str>,
    command: &str,
) -> Result<(), &'static str> {
    if !commands::exists(options, command) {
        return Err(UNAUTHORIZED);
    }
    let key = params
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("apikey"))
        .map(|(_, v)| v.as_str());
    let (Some(signature), Some(key)) = (signature, key) else {
        return Err(UNAUTHORIZED);
    };
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if get("signatureversion") == Some("3") {
        let expires = get("expires").and_then(parse_expires).ok_or(UNAUTHORIZED)?;
        if expires < now || (options.enforce_timestamps && expires > now + 15 * 60) {
            return Err(UNAUTHORIZED);
        }
    } else if options.enforce_timestamps {
        return Err(UNAUTHORIZED);
    }
    if key != options.api_key || signature != expected_signature(params, &options.secret_key) {
        return Err(UNAUTHORIZED);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_developer_guide_example_verifies() {
        let params = BTreeMap::from([
            ("apikey".to_owned(), "plgWJfZK4gyS3mOMTVmjUVg-X-jlWlnfaUJ9GAbBbf9EdM-kAYMmAiLqzzq1ElZLYq_u38zCm0bewzGUdP66mg".to_owned()),
            ("command".to_owned(), "listUsers".to_owned()),
            ("response".to_owned(), "json".to_owned()),
        ]);
        assert_eq!(
            expected_signature(
                &params,
                "VDaACYb0LV9eNjTetIOElcVQkvJck_J_QljX_FcHRj87ZKiy0z0ty0ZsYBkoXkY9b7eq1EhwJaw7FF3akA3KBQ"
            ),
            "TTpdDq/7j/J58XCRHomKoQXEQds="
        );
        assert_eq!(java_encode("a~b c"), "a%7Eb%20c");
        assert_eq!(form_decode("a=x+y%7E&b=%2B")["a"], "x y~");
        assert_eq!(parse_expires("1970-01-01T01:00:00+0100"), Some(0));
    }
}
