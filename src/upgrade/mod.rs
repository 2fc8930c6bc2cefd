//! `cks-iso upgrade-check FROM TO`: will a CKS cluster built from FROM upgrade to TO?
//!
//! CloudStack finds out on the cluster, mid-upgrade: `upgrade-kubernetes.sh` (run with `bash -e`)
//! imports every `docker/*` archive with `ctr` (no retry: one failure aborts the upgrade), copies
//! kubeadm, runs `kubeadm upgrade`, then swaps kubelet and kubectl. This module gives the verdict
//! before any node sees TO, from what `app` read: both sides as `diff` reads them ([`diff::Side`]),
//! TO's archives as containerd imports them ([`scan`]), and TO's `verify` report for the
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

pub mod groups;
pub mod rule;
pub mod scan;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::cloudstack::CloudStack;
use crate::diff::{self, Kind, Side, Source};
use crate::image::Reference;
use crate::release::{Extras, KubeVersion};
pub use scan::{ArchiveImport, IsoScan};

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

/// The images a side bundles, normalised: what its archives record when read, else its lock's or
/// `versions.txt`'s list for `arch`.
fn images_of(side: &Side, scan: Option<&IsoScan>, arch: Option<&str>) -> Option<BTreeSet<String>> {
    let normal = |n: &str| Reference::parse(n).ok().map(|r| r.to_string());
    if let Some(scan) = scan {
        return Some(
            scan.archives
                .iter()
                .filter_map(|a| a.outcome.as_ref().ok())
                .flatten()
                .filter_map(|n| normal(n))
                .collect(),
        );
    }
    let arch = arch
        .and_then(|a| side.arches.get(a))
        .or(side.arches.values().next())?;
    Some(arch.images.keys().filter_map(|n| normal(n)).collect())
}

/// The names nodes take for pause images: those `grep pause` selects ([`crate::plan::sandbox`]).
fn pauses(images: &BTreeSet<String>) -> Vec<String> {
    images
        .iter()
        .filter(|n| crate::plan::sandbox::names_pause(n))
        .cloned()
        .collect()
}

/// Whether `images` holds `wanted` (by repository and tag; a digest pin does not matter).
fn holds(images: &BTreeSet<String>, wanted: &str) -> bool {
    let Ok(want) = Reference::parse(wanted) else {
        return false;
    };
    // By path too: kubeadm names k8s.gcr.io where registry.k8s.io serves the same images.
    images
        .iter()
        .filter_map(|n| Reference::parse(n).ok())
        .any(|r| r.path() == want.path() && r.tag() == want.tag())
}

/// The verdict.
pub fn check(input: &Input) -> Report {
    let (from_v, from_src) = version_of(input.from, input.from_scan);
    let (to_v, to_src) = version_of(input.to, input.to_scan);
    let from_arches = arches_of(input.from, input.from_scan);
    let to_arches = arches_of(input.to, input.to_scan);
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    let mut step = None;

    // 1. CloudStack's rule.
    let parsed = |v: &Option<String>| v.as_deref().and_then(|v| v.parse::<KubeVersion>().ok());
    let (fk, tk) = (parsed(&from_v), parsed(&to_v));
    checks.push(match (&fk, &tk) {
        (Some(f), Some(t)) => match rule::check(f, t) {
            Ok(s) => {
                step = Some(s);
                let kind = match s {
                    rule::Step::Patch => "a later patch of the same minor",
                    rule::Step::Minor => "the next minor",
                };
                pass("version rule", format!(
                    "{} ({}) → {} ({}): {kind}, which CloudStack allows",
                    from_v.as_deref().unwrap_or_default(),
                    from_src.words(),
                    to_v.as_deref().unwrap_or_default(),
                    to_src.words()
                ))
            }
            Err(refused) => fail(
                "version rule",
                refused.to_string(),
                "CloudStack (canUpgradeKubernetesVersion) allows only a later patch of the \
                 cluster's minor or the next minor: upgrade through each minor in turn",
            ),
        },
        _ => {
            let which = if fk.is_none() { &input.from.label } else { &input.to.label };
            fail(
                "version rule",
                format!(
                    "cannot tell {which}'s Kubernetes version: it has no cks-iso.lock, no \
                     versions.txt and no kube-apiserver image in docker/"
                ),
                "give the ISO the cluster was built from and the one it upgrades to, or their locks",
            )
        }
    });

    // 2. One architecture.
    let same = match (from_arches.as_slice(), to_arches.as_slice()) {
        ([], _) | (_, []) => None,
        ([a], [b]) => Some(a == b),
        (a, b) => Some(a.iter().any(|x| b.contains(x))),
    };
    checks.push(match same {
        Some(true) => pass(
            "architecture",
            format!("{} on both", common(&from_arches, &to_arches).join(", ")),
        ),
        Some(false) => fail(
            "architecture",
            format!(
                "mixed architectures: {} is {}, {} is {}",
                input.from.label,
                from_arches.join(", "),
                input.to.label,
                to_arches.join(", ")
            ),
            "upgrade to the ISO of the cluster's architecture (-x86_64.iso for amd64, -aarch64.iso \
             for arm64)",
        ),
        None => fail(
            "architecture",
            "cannot tell the architecture of both sides (no lock, no versions.txt, no readable \
             k8s/kubeadm)"
                .into(),
            "give ISOs with k8s/kubeadm, or locks",
        ),
    });
    let arch = common(&from_arches, &to_arches).into_iter().next();

    // 3. Every archive imports.
    match input.to_scan {
        Some(scan) => {
            let refused: Vec<&ArchiveImport> = scan
                .archives
                .iter()
                .filter(|a| a.outcome.is_err())
                .collect();
            checks.push(match refused.first() {
                None => pass(
                    "archives",
                    format!(
                        "all {} archive(s) in docker/ import as containerd 1.6 imports them",
                        scan.archives.len()
                    ),
                ),
                Some(first) => fail(
                    "archives",
                    format!(
                        "{}: nodes cannot import it: {}{}; upgrade-kubernetes.sh stops at the \
                         first failing import",
                        first.path,
                        first.outcome.as_ref().err().map_or("", |e| e.as_str()),
                        match refused.len() {
                            1 => String::new(),
                            n => format!(" (and {} more archive(s))", n - 1),
                        }
                    ),
                    "rebuild TO (cks-iso build --locked TO), or replace the archive with a good \
                     one of the same image; `cks-iso verify TO` names every problem",
                ),
            });
        }
        None => notes.push(format!(
            "{} is a lock: its archives were not imported (give the ISO to check them)",
            input.to.label
        )),
    }

    // 4. kubeadm's images, and 5. the pause nodes will run.
    let to_images = images_of(input.to, input.to_scan, arch.as_deref());
    let extras = extras_of(input.to, tk.as_ref());
    match (&tk, &to_images) {
        (Some(t), Some(images)) => {
            let mut wanted = crate::release::images(
                t,
                extras.as_ref().unwrap_or(&Extras {
                    coredns: String::new(),
                    etcd: String::new(),
                    pause: String::new(),
                }),
            );
            if extras.is_none() {
                wanted.truncate(4);
                notes.push(format!(
                    "kubeadm v{t}'s pause, etcd and CoreDNS versions are not known to this \
                     cks-iso and TO records none: only the control-plane images were checked"
                ));
            }
            let missing: Vec<&String> = wanted.iter().filter(|w| !holds(images, w)).collect();
            checks.push(match missing.is_empty() {
                true => pass(
                    "kubeadm images",
                    format!(
                        "TO holds the {} images kubeadm v{t} upgrades with",
                        wanted.len()
                    ),
                ),
                false => fail(
                    "kubeadm images",
                    format!(
                        "TO lacks {} of the images `kubeadm upgrade` v{t} needs: {}",
                        missing.len(),
                        missing
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "offline nodes cannot pull them: rebuild TO with cks-iso build, which bundles \
                     kubeadm's images",
                ),
            });
            if let Some(extras) = &extras {
                checks.push(pause_check(input, t, extras, images, arch.as_deref()));
            }
        }
        _ => notes
            .push("TO's images or version are unknown: kubeadm's images were not checked".into()),
    }

    // 6. The CloudStack release.
    let recorded = input
        .to
        .versions
        .get("cloudstack")
        .cloned()
        .flatten()
        .and_then(|c| CloudStack::parse(&c).ok());
    let release = input.cloudstack.or(recorded);
    checks.push(cloudstack_check(input, release));

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

/// TO's kubeadm extras: what its lock recorded, else what this cks-iso knows for the release.
fn extras_of(side: &Side, version: Option<&KubeVersion>) -> Option<Extras> {
    let get = |k: &str| side.versions.get(k).cloned().flatten();
    match (
        get("kubeadm-pause"),
        get("kubeadm-etcd"),
        get("kubeadm-coredns"),
    ) {
        (Some(pause), Some(etcd), Some(coredns)) => Some(Extras {
            coredns,
            etcd,
            pause,
        }),
        _ => version.and_then(Extras::embedded),
    }
}

fn pause_check(
    input: &Input,
    to: &KubeVersion,
    extras: &Extras,
    images: &BTreeSet<String>,
    arch: Option<&str>,
) -> Check {
    let want = format!(
        "{}/pause:{}",
        crate::release::kubeadm::registry(to),
        extras.pause
    );
    let own = pauses(images);
    let picked = |names: &[String]| crate::plan::sandbox::sandbox(names.iter().map(String::as_str));
    if own.len() != 1 || !holds(images, &want) {
        let runs = match picked(&own) {
            Some(p) => format!("nodes would run {p}"),
            None => "nodes would fall back to containerd's default sandbox image, which an \
                     air-gapped node cannot pull"
                .to_owned(),
        };
        return fail(
            "pause",
            format!(
                "TO holds {} pause image(s) ({}), kubeadm v{to} and its kubelet want {want}: \
                 nodes set their sandbox image to `{}`, which selects every image whose name \
                 contains \"pause\"; {runs}",
                own.len(),
                own.join(", "),
                crate::plan::sandbox::NODE_RULE,
            ),
            "bundle exactly one pause image, kubeadm's, and no other image whose name contains \
             \"pause\": rebuild TO with cks-iso build",
        );
    }
    // What a node holds after importing TO on top of FROM, and which one it then runs.
    let mut all: BTreeSet<String> = own.iter().cloned().collect();
    if let Some(from) = images_of(input.from, input.from_scan, arch) {
        all.extend(pauses(&from));
    }
    let all: Vec<String> = all.into_iter().collect();
    let picked = picked(&all).expect("TO holds one");
    let tail = match picked.en_us == own[0] && picked.c == own[0] {
        true => "nodes run it after the upgrade".to_owned(),
        false => format!(
            "after the upgrade nodes still run FROM's {picked} (`grep pause | sort | tail -n 1` \
             over both ISOs' images), which they hold"
        ),
    };
    pass(
        "pause",
        format!("TO holds {want}, the one kubeadm v{to} and its kubelet want; {tail}"),
    )
}

fn cloudstack_check(input: &Input, release: Option<CloudStack>) -> Check {
    let named = release.map_or("every release from 4.20".to_owned(), |c| {
        format!("CloudStack {c}")
    });
    if let Some(report) = input.to_verify {
        // Archives have their own check above.
        let violations: Vec<_> = report
            .violations
            .iter()
            .filter(|v| !v.path.starts_with(crate::contract::IMAGES_DIR))
            .collect();
        return match violations.first() {
            None => pass(
                "cloudstack",
                format!("TO suits {named} (verify finds nothing wrong)"),
            ),
            Some(v) => fail(
                "cloudstack",
                format!(
                    "TO does not suit {named}: {}: {}{}",
                    v.path,
                    v.problem,
                    match violations.len() {
                        1 => String::new(),
                        n => format!(" (and {} more problem(s))", n - 1),
                    }
                ),
                &format!(
                    "`cks-iso verify TO{}` lists every problem; rebuild TO for that release",
                    release.map_or(String::new(), |c| format!(" --cloudstack {c}"))
                ),
            ),
        };
    }
    // A lock: what the release's management server applies must be among its manifests.
    let has = |m: &str| input.to.manifests.contains_key(m);
    let problem = match release {
        Some(c) if c.dashboard_required() && !has(crate::contract::DASHBOARD) => Some(format!(
            "CloudStack {c} applies {} and TO has none",
            crate::contract::DASHBOARD
        )),
        Some(c)
            if c.reads_headlamp()
                && !has(crate::contract::HEADLAMP)
                && !has(crate::contract::DASHBOARD) =>
        {
            Some(format!(
                "CloudStack {c} applies headlamp.yaml (or dashboard.yaml) and TO has neither"
            ))
        }
        _ => None,
    };
    match problem {
        None => pass("cloudstack", format!("TO's manifests suit {named}")),
        Some(p) => fail(
            "cloudstack",
            p,
            "rebuild TO with --cloudstack set to the cluster's release",
        ),
    }
}

fn common(a: &[String], b: &[String]) -> Vec<String> {
    match (a, b) {
        ([x], [y]) if x != y => vec![],
        ([x], [_]) => vec![x.clone()],
        _ => a.iter().filter(|x| b.contains(x)).cloned().collect(),
    }
}

fn pass(check: &'static str, detail: String) -> Check {
    Check {
        check,
        ok: true,
        detail,
        hint: None,
    }
}

fn fail(check: &'static str, detail: String, hint: &str) -> Check {
    Check {
        check,
        ok: false,
        detail,
        hint: Some(hint.to_owned()),
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
