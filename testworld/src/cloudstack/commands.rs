//! The commands the stand-in answers, each checked as the management server checks it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{
    Iso, Job, JobResult, Options, State, Version, ZoneCopy, at_least, download, error, reply,
    zone_id,
};
use crate::server::Outgoing;

const KUBERNETES: [&str; 7] = [
    "listKubernetesSupportedVersions",
    "addKubernetesSupportedVersion",
    "updateKubernetesSupportedVersion",
    "deleteKubernetesSupportedVersion",
    "listKubernetesClusters",
    "listIsos",
    "queryAsyncJobResult",
];

/// Whether the server has `command` (names are case-sensitive; the Kubernetes ones only while
/// the service is enabled).
pub(super) fn exists(options: &Options, command: &str) -> bool {
    match command {
        "listCapabilities" | "listZones" | "listIsos" | "queryAsyncJobResult" => true,
        c if KUBERNETES.contains(&c) => options.kubernetes_enabled,
        _ => false,
    }
}

/// `{"<command>response": {"count": n, key: [...]}}`, or `{}` inside when empty.
fn list(command: &str, key: &str, items: Vec<Value>) -> Outgoing {
    let inner = if items.is_empty() {
        json!({})
    } else {
        json!({ "count": items.len(), key: items })
    };
    reply(
        200,
        &json!({ format!("{}response", command.to_ascii_lowercase()): inner }),
    )
}

fn one(command: &str, key: &str, item: Value) -> Outgoing {
    reply(
        200,
        &json!({ format!("{}response", command.to_ascii_lowercase()): { key: item } }),
    )
}

/// `KubernetesVersionManagerImpl.createKubernetesSupportedVersionResponse`: HA from 1.16.0 on
/// (a semantic comparison), autoscaling where the semantic version sorts at or after "1.15.0" as a
/// string (its `compareTo`), the ISO's id, name, state and direct download from the template.
fn version_json(state: &State, options: &Options, v: &Version) -> Value {
    let iso = state.isos.iter().find(|i| i.id == v.iso);
    let numbers: Vec<u64> = v.semver.split('.').filter_map(|p| p.parse().ok()).collect();
    let supports_ha = numbers.as_slice() >= [1, 16, 0].as_slice();
    let mut value = json!({
        "id": v.id, "name": v.name, "semanticversion": v.semver,
        "isoid": v.iso, "isoname": iso.map(|i| i.name.clone()),
        "isostate": iso.map(|i| i.state().to_owned()),
        "supportsha": supports_ha, "state": v.state, "mincpunumber": v.min_cpu,
        "minmemory": v.min_memory, "supportsautoscaling": v.semver.as_str() >= "1.15.0",
        "directdownload": false, "created": "2026-12-02T10:00:00+0000",
    });
    if let Some(z) = v.zone {
        value["zoneid"] = json!(zone_id(z));
        value["zonename"] = json!(options.zones[z]);
    }
    if at_least(&options.version, (4, 20, 1)) {
        value["arch"] = json!(v.arch);
    }
    value
}

/// One zone's row of `listIsos` as `TemplateJoinDaoImpl.newIsoResponse` writes it for an admin:
/// the checksum through `DigestHelper.getHashValueFromChecksumValue` (the algorithm stripped),
/// the status from `getTemplateStatus`, the owner the system account, the URL shown.
fn iso_json(options: &Options, iso: &Iso, copy: &ZoneCopy) -> Value {
    let checksum = match (&options.reported_checksum, options.list_stored_checksum) {
        (Some(fault), _) => fault.clone(),
        (None, true) => iso.checksum.clone(),
        (None, false) => hash_value(&iso.checksum).to_owned(),
    };
    json!({
        "id": iso.id, "name": iso.name, "displaytext": iso.name, "ispublic": true,
        "isextractable": false, "created": "2026-12-02T10:00:00+0000",
        "isdynamicallyscalable": false, "format": "ISO", "isready": copy.state == "Ready",
        "bootable": false, "isfeatured": false, "crossZones": false, "checksum": checksum,
        "passwordenabled": false, "account": "system", "domain": "ROOT",
        "domainid": "d0000000-0000-4000-8000-000000000001", "status": copy.status,
        "url": iso.url, "zoneid": zone_id(copy.zone), "zonename": options.zones[copy.zone],
        "directdownload": false,
    })
}

/// `DigestHelper.getHashValueFromChecksumValue`: `{ALG}HASH` → `HASH` (when the text starts with
/// `{` and has a `}` after it), anything else unchanged.
pub(crate) fn hash_value(checksum: &str) -> &str {
    match checksum.strip_prefix('{').and_then(|r| r.split_once('}')) {
        Some((_, hash)) => hash,
        None => checksum,
    }
}

/// The fault [`Options::endless_pages`]: a full page of made-up versions, and a count saying
/// there is one page more.
fn endless_page(command: &str, p: &BTreeMap<String, String>) -> Outgoing {
    let number = |k: &str| p.get(k).and_then(|v| v.parse::<u64>().ok());
    let (page, size) = (
        number("page").unwrap_or(1),
        number("pagesize").unwrap_or(500),
    );
    let items: Vec<Value> = (0..size)
        .map(|i| json!({"id": format!("endless-{page}-{i}"), "name": format!("v1.33.{i}"), "semanticversion": "1.33.1", "state": "Enabled"}))
        .collect();
    reply(
        200,
        &json!({ format!("{}response", command.to_ascii_lowercase()): { "count": (page + 1) * size, "kubernetessupportedversion": items } }),
    )
}

pub(super) fn run(
    state: &Arc<Mutex<State>>,
    options: &Options,
    command: &str,
    p: &BTreeMap<String, String>,
) -> Outgoing {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let invalid = |text: &str| error(command, 431, 4350, text);
    match command {
        "listCapabilities" => one(
            command,
            "capability",
            json!({
                "cloudstackversion": options.version,
                "kubernetesserviceenabled": options.kubernetes_enabled,
                "kubernetesclusterexperimentalfeaturesenabled": false,
                "apilimitinterval": 1, "apilimitmax": 0,
            }),
        ),
        "listZones" => list(
            command,
            "zone",
            options
                .zones
                .iter()
                .enumerate()
                .map(|(i, name)| json!({"id": zone_id(i), "name": name, "allocationstate": "Enabled", "networktype": "Advanced"}))
                .collect(),
        ),
        "listKubernetesSupportedVersions" if options.endless_pages => endless_page(command, p),
        "listKubernetesSupportedVersions" => {
            let state = state.lock().unwrap();
            let arch_filter = get("arch").filter(|_| at_least(&options.version, (4, 20, 1)));
            let items = state
                .versions
                .iter()
                .filter(|v| get("id").is_none_or(|id| v.id == id))
                .filter(|v| get("keyword").is_none_or(|k| v.name.contains(k)))
                .filter(|v| get("zoneid").is_none_or(|z| v.zone.is_none_or(|vz| zone_id(vz) == z)))
                .filter(|v| arch_filter.is_none_or(|a| v.arch == a))
                .map(|v| version_json(&state, options, v))
                .collect();
            list(command, "kubernetessupportedversion", items)
        }
        "listIsos" => {
            let state = state.lock().unwrap();
            let items = state
                .isos
                .iter()
                .filter(|i| get("id").is_none_or(|id| i.id == id))
                .flat_map(|iso| iso.copies.iter().map(move |copy| iso_json(options, iso, copy)))
                .collect();
            list(command, "iso", items)
        }
        "listKubernetesClusters" => list_clusters(state, command, p),
        "addKubernetesSupportedVersion" => add_version(state, options, command, p),
        "updateKubernetesSupportedVersion" => {
            let mut s = state.lock().unwrap();
            let wanted = get("state");
            if wanted.is_none() {
                return invalid("Unable to execute API command updatekubernetessupportedversion due to missing parameter state");
            }
            if !matches!(wanted, Some("Enabled" | "Disabled")) {
                return invalid("Invalid value for state parameter");
            }
            let Some(v) = s.versions.iter_mut().find(|v| Some(v.id.as_str()) == get("id")) else {
                return invalid("Invalid Kubernetes version id specified");
            };
            v.state = wanted.unwrap_or_default().to_owned();
            let v = v.clone();
            one(command, "kubernetessupportedversion", version_json(&s, options, &v))
        }
        "deleteKubernetesSupportedVersion" => delete_version(state, options, command, p),
        "queryAsyncJobResult" => query_job(state, command, p),
        _ => error(command, 401, 9999, super::UNAUTHORIZED),
    }
}

/// `listKubernetesClusters`: the clusters of the project asked for (`-1`: of every project; none: outside projects).
fn list_clusters(
    state: &Arc<Mutex<State>>,
    command: &str,
    p: &BTreeMap<String, String>,
) -> Outgoing {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let state = state.lock().unwrap();
    let items = state
        .clusters
        .iter()
        .filter(|c| match (get("projectid"), &c.project) {
            (None, owner) => owner.is_none(),
            (Some("-1"), owner) => owner.is_some(),
            (Some(p), owner) => owner.as_deref() == Some(p),
        })
        .map(|c| {
            let mut v = json!({"id": c.id, "name": c.name, "kubernetesversionid": c.version, "state": "Running"});
            if let Some(p) = &c.project {
                v["projectid"] = json!(p);
                v["project"] = json!(format!("project-{p}"));
            }
            v
        })
        .collect();
    list(command, "kubernetescluster", items)
}

/// `addKubernetesSupportedVersion`: its parameters checked as the management server checks them, then the version and its ISO added and the ISO's download started.
fn add_version(
    state: &Arc<Mutex<State>>,
    options: &Options,
    command: &str,
    p: &BTreeMap<String, String>,
) -> Outgoing {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let invalid = |text: &str| error(command, 431, 4350, text);
    let Some(semver) = get("semanticversion") else {
        return invalid(
            "Unable to execute API command addkubernetessupportedversion due to missing parameter semanticversion",
        );
    };
    if !is_semver(semver) {
        return invalid(&format!(
            "Invalid version format, {semver}. Semantic version should be specified in MAJOR.MINOR.PATCH format"
        ));
    }
    let number = |k: &str| get(k).and_then(|v| v.parse::<u32>().ok());
    let Some(cpu) = number("mincpunumber").filter(|c| *c >= 2) else {
        return invalid("Invalid value for mincpunumber parameter. Minimum 2 vCPUs required.");
    };
    let Some(memory) = number("minmemory").filter(|m| *m >= 2048) else {
        return invalid("Invalid value for minmemory parameter. Minimum 2048MB memory required");
    };
    let Some(url) = get("url") else {
        return invalid("Invalid URL for ISO specified, null");
    };
    if let Some(why) = url_refused(url) {
        return invalid(&why);
    }
    let arch = match arch_of(options, command, get("arch")) {
        Ok(arch) => arch,
        Err(refused) => return refused,
    };
    let zone = match get("zoneid") {
        None => None,
        Some(z) => match (0..options.zones.len()).find(|i| zone_id(*i) == z) {
            Some(i) => Some(i),
            None => return invalid("Invalid zone specified"),
        },
    };
    let name = get("name").map_or_else(
        || match zone {
            Some(z) => format!("v{semver}-{}", options.zones[z]),
            None => format!("v{semver}"),
        },
        str::to_owned,
    );
    let mut s = state.lock().unwrap();
    let iso_id = s.id(0x150);
    let zones: Vec<usize> = zone.map_or_else(|| (0..options.zones.len()).collect(), |z| vec![z]);
    s.isos.push(Iso {
        id: iso_id.clone(),
        name: format!("{name}-Kubernetes-Binaries-ISO"),
        url: url.to_owned(),
        checksum: get("checksum").unwrap_or_default().to_owned(),
        copies: zones
            .iter()
            .map(|z| ZoneCopy {
                zone: *z,
                state: "Creating".into(),
                status: String::new(),
            })
            .collect(),
    });
    let id = s.id(0x4b8);
    let v = Version {
        id,
        name,
        semver: semver.to_owned(),
        arch: arch.to_owned(),
        state: "Enabled".into(),
        iso: iso_id.clone(),
        zone,
        min_cpu: cpu,
        min_memory: memory,
    };
    let answer = version_json(&s, options, &v);
    s.versions.push(v);
    drop(s);
    download::start(state.clone(), options.step_ms, iso_id);
    one(command, "kubernetessupportedversion", answer)
}

/// `deleteKubernetesSupportedVersion`: an async job, which fails while a cluster uses the version.
fn delete_version(
    state: &Arc<Mutex<State>>,
    options: &Options,
    command: &str,
    p: &BTreeMap<String, String>,
) -> Outgoing {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let invalid = |text: &str| error(command, 431, 4350, text);
    let mut s = state.lock().unwrap();
    let Some(v) = s
        .versions
        .iter()
        .find(|v| Some(v.id.as_str()) == get("id"))
        .cloned()
    else {
        return invalid("Invalid Kubernetes version id specified");
    };
    let used = s.clusters.iter().any(|c| c.version == v.id);
    let result = if used {
        JobResult::Failed(format!(
            "Unable to delete Kubernetes version ID: {}. Existing clusters currently using the version.",
            v.id
        ))
    } else {
        JobResult::Succeeded
    };
    let jobid = s.id(0x70b);
    s.jobs.insert(jobid.clone(), Job { cmd: "org.apache.cloudstack.api.command.admin.kubernetes.version.DeleteKubernetesSupportedVersionCmd".into(), polls_left: if options.job_never_ends { u32::MAX } else { 1 }, result });
    if !used && !options.job_never_ends {
        // The job runs at once; what it removes is gone for the next list.
        s.versions.retain(|x| x.id != v.id);
        s.isos.retain(|i| i.id != v.iso);
    }
    reply(
        200,
        &json!({"deletekubernetessupportedversionresponse": {"jobid": jobid}}),
    )
}

/// `queryAsyncJobResult`: pending until the job's polls are used up, then its result.
fn query_job(state: &Arc<Mutex<State>>, command: &str, p: &BTreeMap<String, String>) -> Outgoing {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let invalid = |text: &str| error(command, 431, 4350, text);
    let mut s = state.lock().unwrap();
    let Some(job) = get("jobid").and_then(|j| s.jobs.get_mut(j)) else {
        return invalid(
            "Unable to execute API command queryasyncjobresult due to invalid value. Invalid parameter jobid",
        );
    };
    let mut out = json!({
        "accountid": "0000", "userid": "0000", "cmd": job.cmd, "jobid": get("jobid"),
        "jobprocstatus": 0, "created": "2026-12-02T10:00:00+0000",
    });
    if job.polls_left > 0 {
        job.polls_left -= 1;
        out["jobstatus"] = json!(0);
        out["jobresultcode"] = json!(0);
    } else {
        match &job.result {
            JobResult::Succeeded => {
                out["jobstatus"] = json!(1);
                out["jobresultcode"] = json!(0);
                out["jobresulttype"] = json!("object");
                out["jobresult"] = json!({"success": true});
            }
            JobResult::Failed(text) => {
                out["jobstatus"] = json!(2);
                out["jobresultcode"] = json!(530);
                out["jobresulttype"] = json!("object");
                out["jobresult"] = json!({"uuidList": [], "errorcode": 530, "errortext": text});
            }
        }
    }
    reply(200, &json!({"queryasyncjobresultresponse": out}))
}

/// Whether `semver` is `MAJOR.MINOR.PATCH`, digits only.
fn is_semver(semver: &str) -> bool {
    let parts: Vec<&str> = semver.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Why the management server refuses an ISO's `url`: longer than 255 characters, not HTTP(S),
/// or not ending in `.iso` (query and fragment aside).
fn url_refused(url: &str) -> Option<String> {
    if url.len() > 255 {
        return Some(format!("URL {url} is longer than 255 characters"));
    }
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !(url.starts_with("http://") || url.starts_with("https://")) || !path.ends_with(".iso") {
        return Some(format!(
            "Please specify a valid URL. URL:{url} is an invalid for the format iso"
        ));
    }
    None
}

/// The version's architecture: `arch` from 4.20.1 on (`x86_64` when not given), else `x86_64`;
/// the error reply for another value.
fn arch_of<'a>(
    options: &Options,
    command: &str,
    given: Option<&'a str>,
) -> Result<&'a str, Outgoing> {
    if !at_least(&options.version, (4, 20, 1)) {
        return Ok("x86_64");
    }
    match given {
        None => Ok("x86_64"),
        Some(a @ ("x86_64" | "aarch64")) => Ok(a),
        Some(other) => Err(error(
            command,
            431,
            4350,
            &format!(
                "Unable to execute API command addkubernetessupportedversion due to invalid value. Invalid parameter arch value={other} due to incorrect type or invalid value"
            ),
        )),
    }
}
