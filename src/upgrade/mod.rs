//! `cks-iso upgrade-check FROM TO`: will a CKS cluster built from FROM upgrade to TO?
//!
//! CloudStack finds out on the cluster, mid-upgrade: `upgrade-kubernetes.sh` (run with `bash -e`)
//! imports every `docker/*` archive with `ctr` (no retry: one failure aborts the upgrade), copies
//! kubeadm, runs `kubeadm upgrade`, then swaps kubelet and kubectl. This module gives the verdict
//! before any node sees TO, from what `app` read: both sides as `diff` reads them ([`diff::Side`]),
//! TO's archives as containerd imports them ([`scan()`]), and TO's `verify` report for the
//! CloudStack release the cluster runs. The checks:
//!
//! - CloudStack's version rule ([`rule`]) and the same architecture on both sides;
//! - every archive of TO imports (naming the first one nodes would fail on);
//! - TO holds kubeadm's images for TO's version (control plane, pause, etcd, CoreDNS) and
//!   exactly the pause TO's kubeadm and kubelet want, no other image whose name contains `pause`
//!   (nodes take any for their sandbox, [`crate::plan::sandbox`]);
//! - TO suits the CloudStack release;
//!
//! and what changes, grouped ([`groups`]). An ISO that records nothing (no lock, no
//! `versions.txt`) gets its Kubernetes version from its control-plane images' names.

mod checks;
pub mod groups;
pub mod rule;
mod scan;

use serde::Serialize;

use crate::cloudstack::CloudStack;
use crate::diff::{self, Kind, Side, Source};
use crate::image::Reference;
use crate::release::KubeVersion;
pub use scan::{ArchiveImport, IsoScan, scan};

/// The version of the JSON form; a change that breaks readers bumps it.
pub const FORMAT: u32 = 1;

/// Where a side's Kubernetes version was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionFrom {
    /// A `cks-iso.lock` (a lock file, or the one at an ISO's root).
    Lock,
    /// The ISO's `versions.txt`.
    VersionsTxt,
    /// The tag of the `kube-apiserver` image in the ISO's `docker/` archives.
    ImageNames,
    /// Nowhere: the version is unknown.
    Unknown,
}

impl VersionFrom {
    fn words(self) -> &'static str {
        match self {
            Self::Lock => "from its cks-iso.lock",
            Self::VersionsTxt => "from its versions.txt",
            Self::ImageNames => {
                "from its kube-apiserver image's tag: it has no cks-iso.lock or versions.txt"
            }
            Self::Unknown => "unknown",
        }
    }
}

/// One side as the verdict names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideInfo {
    /// The file as the user named it.
    pub path: String,
    /// `iso` or `lock`.
    pub kind: Kind,
    /// Its Kubernetes version (`1.33.1`), when known.
    pub kubernetes: Option<String>,
    /// Where that version was read.
    pub version_from: VersionFrom,
    /// Its architectures (`amd64`, `arm64`).
    pub arches: Vec<String>,
    /// An ISO's own signature, as `diff` shows it (who signed, when); `null` for a lock.
    pub signature: Option<diff::Signature>,
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `version rule`, `architecture`, `archives`, `kubeadm images`, `pause`, `cloudstack`.
    pub check: &'static str,
    /// Whether it passed.
    pub ok: bool,
    /// What was found (on failure: the problem).
    pub detail: String,
    /// What to do, on failure.
    pub hint: Option<String>,
}

/// The verdict on one pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: u32,
    /// Whether the upgrade should work: every check passed.
    pub ok: bool,
    /// The cluster's side.
    pub from: SideInfo,
    /// The ISO it upgrades to.
    pub to: SideInfo,
    /// `patch` or `minor` when CloudStack allows the pair.
    pub step: Option<rule::Step>,
    /// The CloudStack release judged against (`null`: what every release from 4.20 reads).
    pub cloudstack: Option<String>,
    /// Every check, in order.
    pub checks: Vec<Check>,
    /// What was not checked, and why (a lock has no archives to import).
    pub notes: Vec<String>,
    /// What changes, grouped.
    pub changes: Vec<groups::Group>,
}

/// What `app` read for the verdict.
pub struct Input<'a> {
    /// FROM as `diff` reads it.
    pub from: &'a Side,
    /// TO as `diff` reads it.
    pub to: &'a Side,
    /// FROM's archives, when FROM is an ISO.
    pub from_scan: Option<&'a IsoScan>,
    /// TO's archives, when TO is an ISO.
    pub to_scan: Option<&'a IsoScan>,
    /// The release the cluster runs (`--cloudstack`); else what TO records.
    pub cloudstack: Option<CloudStack>,
    /// TO's `verify` report for that release, when TO is an ISO.
    pub to_verify: Option<&'a crate::verify::Report>,
    /// `diff FROM TO`.
    pub changes: &'a diff::Report,
}

/// A side's label and Kubernetes version as the version rule names them.
struct Named<'a> {
    label: &'a str,
    version: Option<&'a str>,
    from: VersionFrom,
    parsed: Option<&'a KubeVersion>,
}

/// A side's version and where it came from.
fn version_of(side: &Side, scan: Option<&IsoScan>) -> (Option<String>, VersionFrom) {
    if let Some(Some(v)) = side.versions.get("kubernetes") {
        let from = match side.source {
            Source::VersionsTxt => VersionFrom::VersionsTxt,
            _ => VersionFrom::Lock,
        };
        return (Some(v.clone()), from);
    }
    let from_names = scan.and_then(|s| {
        s.archives
            .iter()
            .filter_map(|a| a.outcome.as_ref().ok())
            .flatten()
            .filter_map(|n| Reference::parse(n).ok())
            .find(|r| r.path().rsplit('/').next() == Some("kube-apiserver"))
            .and_then(|r| r.tag().map(|t| t.trim_start_matches('v').replace('_', "+")))
    });
    match from_names {
        Some(v) => (Some(v), VersionFrom::ImageNames),
        None => (None, VersionFrom::Unknown),
    }
}

/// A side's architectures: what it records, else its `k8s/kubeadm`'s.
fn arches_of(side: &Side, scan: Option<&IsoScan>) -> Vec<String> {
    match side.arches.is_empty() {
        false => side.arches.keys().cloned().collect(),
        true => scan
            .and_then(|s| s.arch)
            .map(|a| vec![a.as_str().to_owned()])
            .unwrap_or_default(),
    }
}

/// The verdict.
pub fn check(input: &Input) -> Report {
    let (from_v, from_src) = version_of(input.from, input.from_scan);
    let (to_v, to_src) = version_of(input.to, input.to_scan);
    let from_arches = arches_of(input.from, input.from_scan);
    let to_arches = arches_of(input.to, input.to_scan);
    let parsed = |v: &Option<String>| v.as_deref().and_then(|v| v.parse::<KubeVersion>().ok());
    let (fk, tk) = (parsed(&from_v), parsed(&to_v));
    let from = Named {
        label: &input.from.label,
        version: from_v.as_deref(),
        from: from_src,
        parsed: fk.as_ref(),
    };
    let to = Named {
        label: &input.to.label,
        version: to_v.as_deref(),
        from: to_src,
        parsed: tk.as_ref(),
    };
    let (rule_check, step) = checks::version_rule(&from, &to);
    let mut checks = vec![
        rule_check,
        checks::architecture(input, &from_arches, &to_arches),
    ];
    let mut notes = Vec::new();
    let arch = checks::common(&from_arches, &to_arches).into_iter().next();
    match input.to_scan {
        Some(scan) => checks.push(checks::archives(scan)),
        None => notes.push(format!(
            "{} is a lock: its archives were not imported (give the ISO to check them)",
            input.to.label
        )),
    }
    checks::kubeadm_images(input, tk.as_ref(), arch.as_deref(), &mut checks, &mut notes);

    // 6. The CloudStack release.
    let recorded = input
        .to
        .versions
        .get("cloudstack")
        .cloned()
        .flatten()
        .and_then(|c| CloudStack::parse(&c).ok());
    let release = input.cloudstack.or(recorded);
    checks.push(checks::cloudstack(input, release));

    let ok = checks.iter().all(|c| c.ok);
    Report {
        format: FORMAT,
        ok,
        from: SideInfo {
            path: input.from.label.clone(),
            kind: input.from.kind,
            kubernetes: from_v,
            version_from: from_src,
            arches: from_arches,
            signature: input.from.signature.clone(),
        },
        to: SideInfo {
            path: input.to.label.clone(),
            kind: input.to.kind,
            kubernetes: to_v,
            version_from: to_src,
            arches: to_arches,
            signature: input.to.signature.clone(),
        },
        step,
        cloudstack: release.map(|c| c.to_string()),
        checks,
        notes,
        changes: groups::of(input.changes),
    }
}

/// The report as text: the verdict, a line per check (`ok    …`, `FAIL  …` and its hint), the
/// notes, then the changes by group.
pub fn render(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let side = |s: &SideInfo| {
        format!(
            "{} ({}, {})",
            s.path,
            s.kubernetes.as_deref().unwrap_or("version unknown"),
            match s.arches.is_empty() {
                true => "arch unknown".to_owned(),
                false => s.arches.join(", "),
            }
        )
    };
    let failed = report.checks.iter().filter(|c| !c.ok).count();
    let _ = writeln!(
        out,
        "upgrade {} → {}: {}",
        side(&report.from),
        side(&report.to),
        match failed {
            0 => "should work".to_owned(),
            n => format!("will fail ({n} of {} checks failed)", report.checks.len()),
        }
    );
    for (name, s) in [("from", &report.from), ("to", &report.to)] {
        if let Some(sig) = &s.signature {
            let _ = writeln!(out, "{name}: {}", sig.words());
        }
    }
    for c in &report.checks {
        let mark = if c.ok { "ok  " } else { "FAIL" };
        let _ = writeln!(out, "{mark}  {}: {}", c.check, c.detail);
        if let Some(h) = &c.hint {
            let _ = writeln!(out, "      hint: {h}");
        }
    }
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if !report.changes.is_empty() {
        out.push_str("changes:\n");
    }
    let short = |v: &Option<String>| {
        v.as_deref()
            .map_or("-".to_owned(), |v| match v.strip_prefix("sha256:") {
                Some(hex) => format!("sha256:{}", &hex[..hex.len().min(12)]),
                None if v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    format!("sha256:{}", &v[..12])
                }
                None => v.to_owned(),
            })
    };
    for g in &report.changes {
        let _ = writeln!(out, "  {}:", g.group);
        for i in &g.changes {
            let (mark, text) = match i.change {
                diff::ChangeKind::Added => ('+', short(&i.b)),
                diff::ChangeKind::Removed => ('-', short(&i.a)),
                diff::ChangeKind::Changed => ('~', format!("{} → {}", short(&i.a), short(&i.b))),
            };
            let _ = writeln!(out, "    {mark} {} {}: {text}", i.kind, i.name);
        }
        if let Some(n) = &g.note {
            let _ = writeln!(out, "    note: {n}");
        }
    }
    out
}
