//! The CloudStack API client for the few commands registration needs: every request signed (v3,
//! with `expires`), reads as `GET`, state changes as `POST` with the parameters in the form body
//! (what 4.21's `enforce.post.requests.and.timestamps` demands), answers unwrapped from their
//! `{"<command>response": …}` envelope and errors read from CloudStack's shape: the HTTP status and
//! `errorcode`, `cserrorcode`, `errortext`.
//!
//! Every answer is bounded (issue 44, M2; docs/concepts/security.md): a body is read through a cap
//! of [`MAX_ANSWER`] bytes and within the request's timeout, and a list is paged only as far as the
//! first page's `count` says (`ceil(count / pagesize)` pages) and never past [`MAX_PAGES`], so an
//! endless or lying server costs a bounded time and memory and ends in an error naming it.
//!
//! The typed answers ([`super::answers`], re-exported here) are read leniently.

use std::time::Duration;

use serde_json::Value;

pub use super::answers::{Capabilities, Cluster, IsoZone, Job, SupportedVersion, Zone, zones_line};
use super::credentials::Credentials;
use super::sign;

/// How long a signed request stays valid (`expires`): CloudStack refuses more than 15 minutes
/// ahead when it enforces timestamps, and a clock a little behind must not make it expire at once.
const TTL_SECONDS: i64 = 10 * 60;

/// The largest answer read: a page of 500 ISOs or versions is well under 2 MiB, and a body past
/// this is a server streaming without end, read no further.
pub const MAX_ANSWER: usize = 16 << 20;

/// Items asked for per page.
pub const PAGE: usize = 500;

/// The most pages one list reads (25,000 items): more is a count that lies.
pub const MAX_PAGES: usize = 50;

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No answer (connection, TLS, timeout).
    #[error("cannot reach the CloudStack API at {endpoint} ({command}): {reason}")]
    Transport {
        /// The endpoint.
        endpoint: String,
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// 401: a bad signature or key, or a command this server does not have for this account.
    #[error("CloudStack refused {command} with 401: {text}")]
    Unauthorized {
        /// The command.
        command: String,
        /// CloudStack's `errortext`.
        text: String,
    },
    /// Any other error CloudStack reports.
    #[error(
        "CloudStack answered {command} with {status} (errorcode {errorcode}, cserrorcode {cserrorcode}): {text}"
    )]
    Failed {
        /// The command.
        command: String,
        /// The HTTP status.
        status: u16,
        /// `errorcode` (431 bad parameter, 432 not allowed, 530 failure).
        errorcode: i64,
        /// `cserrorcode`.
        cserrorcode: i64,
        /// `errortext`.
        text: String,
    },
    /// An async job still pending at `--timeout`.
    #[error("{command} of {id}: job {jobid} had not ended after {waited:?}")]
    JobTimeout {
        /// The command.
        command: String,
        /// What it acts on.
        id: String,
        /// The job.
        jobid: String,
        /// How long it was polled.
        waited: Duration,
    },
    /// An answer that is not CloudStack's shape.
    #[error("CloudStack's answer to {command} is not what it sends: {reason}")]
    BadReply {
        /// The command.
        command: String,
        /// What is wrong.
        reason: String,
    },
}

impl ApiError {
    /// What the user can do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Transport { .. } => Some("check the endpoint URL (…/client/api) and that this host can reach it".into()),
            Self::Unauthorized { .. } => Some(
                "a 401 means a wrong API key or secret key, or a command this account may not run: \
                 registering needs a root admin's keys, and the Kubernetes service enabled \
                 (cloud.kubernetes.service.enabled=true)"
                    .into(),
            ),
            Self::Failed { errorcode: 432, .. } => Some("the account lacks the permission: use a root admin's keys".into()),
            Self::JobTimeout { jobid, .. } => Some(format!(
                "the job may still finish: see `cmk query asyncjobresult jobid={jobid}` or the \
                 UI's events, and raise --timeout to wait longer"
            )),
            Self::BadReply { .. } => Some(
                "the endpoint does not answer as CloudStack does: check that it is the management \
                 server's …/client/api (over https://, so that nothing on the path can answer in \
                 its place)"
                    .into(),
            ),
            Self::Failed { .. } => None,
        }
    }
}

/// A signed-request client for one endpoint.
pub struct Api {
    http: reqwest::Client,
    creds: Credentials,
}

impl Api {
    /// A client for `creds`, over `http` (which must not follow redirects: a signed POST is not
    /// replayed elsewhere).
    pub fn new(http: reqwest::Client, creds: Credentials) -> Self {
        Self { http, creds }
    }

    /// The endpoint it calls.
    pub fn endpoint(&self) -> &str {
        &self.creds.endpoint
    }

    /// The call's query: the command, its parameters and the expiry, signed (signature
    /// version 3) with the secret key, each value encoded as CloudStack's Java decodes it.
    fn signed_query(&self, command: &str, params: &[(&str, String)]) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let mut all: Vec<(String, String)> = vec![
            ("command".into(), command.into()),
            ("response".into(), "json".into()),
            ("apikey".into(), self.creds.api_key.expose().into()),
            ("signatureversion".into(), "3".into()),
            ("expires".into(), sign::expires(now, TTL_SECONDS)),
        ];
        all.extend(params.iter().map(|(n, v)| ((*n).to_owned(), v.clone())));
        let signature = sign::signature(&all, self.creds.secret_key.expose());
        all.push(("signature".into(), signature));
        all.iter()
            .map(|(n, v)| format!("{n}={}", sign::java_url_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// Calls `command` with `params`; `post` for a state change. Returns the envelope's value.
    pub async fn call(
        &self,
        command: &str,
        params: &[(&str, String)],
        post: bool,
    ) -> Result<Value, ApiError> {
        let body = self.signed_query(command, params);
        let request = if post {
            self.http
                .post(&self.creds.endpoint)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body)
        } else {
            let sep = if self.creds.endpoint.contains('?') {
                '&'
            } else {
                '?'
            };
            self.http.get(format!("{}{sep}{body}", self.creds.endpoint))
        };
        let transport = |e: reqwest::Error| ApiError::Transport {
            endpoint: crate::fetch::redact(&self.creds.endpoint),
            command: command.to_owned(),
            reason: e.without_url().to_string(),
        };
        let response = request
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        let bad = |reason: String| ApiError::BadReply {
            command: command.to_owned(),
            reason,
        };
        let text = read_capped(response, MAX_ANSWER)
            .await
            .map_err(transport)?
            .ok_or_else(|| {
                bad(format!(
                    "HTTP {status}, an answer larger than {} (read no further)",
                    indicatif::HumanBytes(MAX_ANSWER as u64)
                ))
            })?;
        let text = String::from_utf8_lossy(&text);
        let json: Value = serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "HTTP {status}, not JSON ({e}); is the endpoint …/client/api?"
            ))
        })?;
        answer(command, status, &json)
    }

    fn typed<T: serde::de::DeserializeOwned>(command: &str, value: Value) -> Result<T, ApiError> {
        serde_json::from_value(value).map_err(|e| ApiError::BadReply {
            command: command.to_owned(),
            reason: e.to_string(),
        })
    }

    /// A list command's items under `key`, every page: as many as the first page's `count` says
    /// (`ceil(count / PAGE)`), at most [`MAX_PAGES`]; a short page ends it sooner.
    async fn list<T: serde::de::DeserializeOwned>(
        &self,
        command: &str,
        key: &str,
        params: &[(&str, String)],
    ) -> Result<Vec<T>, ApiError> {
        let mut all = Vec::new();
        let mut pages = 1;
        let mut page = 1;
        while page <= pages {
            let mut p = params.to_vec();
            p.push(("page", page.to_string()));
            p.push(("pagesize", PAGE.to_string()));
            let value = self.call(command, &p, false).await?;
            let items: Vec<T> = match value.get(key) {
                Some(items) => Self::typed(command, items.clone())?,
                None => Vec::new(),
            };
            if page == 1 {
                let count = value.get("count").and_then(Value::as_u64).unwrap_or(0);
                pages = pages_for(count).ok_or_else(|| ApiError::BadReply {
                    command: command.to_owned(),
                    reason: format!(
                        "its count says {count} items, more than the {} ({MAX_PAGES} pages of \
                         {PAGE}) cks-iso reads",
                        MAX_PAGES * PAGE
                    ),
                })?;
            }
            let short = items.len() < PAGE;
            all.extend(items);
            if short {
                break;
            }
            page += 1;
        }
        Ok(all)
    }

    /// `listCapabilities`.
    pub async fn capabilities(&self) -> Result<Capabilities, ApiError> {
        let v = self.call("listCapabilities", &[], false).await?;
        Self::typed(
            "listCapabilities",
            v.get("capability").cloned().unwrap_or_default(),
        )
    }

    /// `listKubernetesSupportedVersions` (all of them: it has no name filter).
    pub async fn versions(&self) -> Result<Vec<SupportedVersion>, ApiError> {
        self.list(
            "listKubernetesSupportedVersions",
            "kubernetessupportedversion",
            &[],
        )
        .await
    }

    /// `listKubernetesSupportedVersions id=…`.
    pub async fn version(&self, id: &str) -> Result<Option<SupportedVersion>, ApiError> {
        let list: Vec<SupportedVersion> = self
            .list(
                "listKubernetesSupportedVersions",
                "kubernetessupportedversion",
                &[("id", id.to_owned())],
            )
            .await?;
        Ok(list.into_iter().next())
    }

    /// `listIsos id=… isofilter=all`: the ISO in each zone.
    pub async fn iso_zones(&self, isoid: &str) -> Result<Vec<IsoZone>, ApiError> {
        self.list(
            "listIsos",
            "iso",
            &[
                ("id", isoid.to_owned()),
                ("isofilter", "all".into()),
                ("listall", "true".into()),
            ],
        )
        .await
    }

    /// `listZones`.
    pub async fn zones(&self) -> Result<Vec<Zone>, ApiError> {
        self.list("listZones", "zone", &[]).await
    }

    /// Every Kubernetes cluster: `listKubernetesClusters listall=true`, which skips the clusters
    /// projects own (CloudStack's list rules, `SkipProjectResources` without `projectid`), and
    /// again with `projectid=-1` for those (`ListProjectResourcesOnly`, or every cluster on
    /// releases that list all with it), merged by id.
    pub async fn clusters(&self) -> Result<Vec<Cluster>, ApiError> {
        let mut all: Vec<Cluster> = self
            .list(
                "listKubernetesClusters",
                "kubernetescluster",
                &[("listall", "true".into())],
            )
            .await?;
        let projects: Vec<Cluster> = self
            .list(
                "listKubernetesClusters",
                "kubernetescluster",
                &[("listall", "true".into()), ("projectid", "-1".into())],
            )
            .await?;
        for c in projects {
            if !all.iter().any(|a| a.id == c.id) {
                all.push(c);
            }
        }
        Ok(all)
    }

    /// `addKubernetesSupportedVersion` (synchronous; the ISO is then downloaded per zone).
    pub async fn add(&self, params: &[(&str, String)]) -> Result<SupportedVersion, ApiError> {
        let v = self
            .call("addKubernetesSupportedVersion", params, true)
            .await?;
        Self::typed(
            "addKubernetesSupportedVersion",
            v.get("kubernetessupportedversion")
                .cloned()
                .unwrap_or_default(),
        )
    }

    /// `updateKubernetesSupportedVersion id=… state=Disabled`.
    pub async fn disable(&self, id: &str) -> Result<(), ApiError> {
        self.call(
            "updateKubernetesSupportedVersion",
            &[("id", id.to_owned()), ("state", "Disabled".into())],
            true,
        )
        .await
        .map(drop)
    }

    /// `deleteKubernetesSupportedVersion id=…`, then its job polled to the end or for `timeout`
    /// at most. [`Deleted::Refused`] when the job failed (a cluster uses the version), with
    /// CloudStack's own words; [`ApiError::JobTimeout`] when it had not ended in time.
    pub async fn delete(
        &self,
        id: &str,
        poll: Duration,
        timeout: Duration,
    ) -> Result<Deleted, ApiError> {
        let started = std::time::Instant::now();
        let v = self
            .call(
                "deleteKubernetesSupportedVersion",
                &[("id", id.to_owned())],
                true,
            )
            .await?;
        let jobid = v
            .get("jobid")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::BadReply {
                command: "deleteKubernetesSupportedVersion".into(),
                reason: "no jobid".into(),
            })?
            .to_owned();
        loop {
            let v = self
                .call("queryAsyncJobResult", &[("jobid", jobid.clone())], false)
                .await?;
            let job: Job = Self::typed("queryAsyncJobResult", v)?;
            match job.jobstatus {
                0 if started.elapsed() >= timeout => {
                    return Err(ApiError::JobTimeout {
                        command: "deleteKubernetesSupportedVersion".into(),
                        id: id.to_owned(),
                        jobid,
                        waited: timeout,
                    });
                }
                0 => {
                    let left = timeout.saturating_sub(started.elapsed());
                    tokio::time::sleep(poll.min(left).max(Duration::from_millis(10))).await;
                }
                1 => return Ok(Deleted::Done),
                _ => {
                    let text = job
                        .jobresult
                        .get("errortext")
                        .and_then(Value::as_str)
                        .unwrap_or("the job failed")
                        .to_owned();
                    return Ok(Deleted::Refused(text));
                }
            }
        }
    }
}

/// How many pages of [`PAGE`] a list of `count` items takes (at least one); `None` past
/// [`MAX_PAGES`].
fn pages_for(count: u64) -> Option<usize> {
    let pages = usize::try_from(count.div_ceil(PAGE as u64)).ok()?.max(1);
    (pages <= MAX_PAGES).then_some(pages)
}

/// The body of `response`, or `None` once it passes `cap` bytes (memory holds at most `cap` plus
/// one chunk).
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > cap {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// How a delete's job ended ([`Api::delete`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// The version is gone.
    Done,
    /// CloudStack refused (a cluster uses the version): its words.
    Refused(String),
}

/// The value of a reply's envelope (`<command>response`, else its one key): on HTTP 200 the
/// value, else the error it carries.
fn answer(command: &str, status: u16, json: &Value) -> Result<Value, ApiError> {
    let key = format!("{}response", command.to_ascii_lowercase());
    let bad = |reason: String| ApiError::BadReply {
        command: command.to_owned(),
        reason,
    };
    let inner = json
        .get(&key)
        .or_else(|| json.as_object().and_then(|o| o.values().next()))
        .cloned()
        .ok_or_else(|| bad(format!("HTTP {status}, no {key}")))?;
    if status == 200 {
        return Ok(inner);
    }
    let text = inner
        .get("errortext")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if status == 401 {
        return Err(ApiError::Unauthorized {
            command: command.to_owned(),
            text,
        });
    }
    let number = |k: &str| inner.get(k).and_then(Value::as_i64).unwrap_or_default();
    Err(ApiError::Failed {
        command: command.to_owned(),
        status,
        errorcode: number("errorcode"),
        cserrorcode: number("cserrorcode"),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_follows_the_count_and_stops_at_the_limit() {
        assert_eq!(pages_for(0), Some(1));
        assert_eq!(pages_for(500), Some(1));
        assert_eq!(pages_for(501), Some(2));
        assert_eq!(pages_for((MAX_PAGES * PAGE) as u64), Some(MAX_PAGES));
        assert_eq!(pages_for((MAX_PAGES * PAGE) as u64 + 1), None);
        assert_eq!(pages_for(u64::MAX), None);
    }
}
