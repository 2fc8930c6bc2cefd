//! The checks of `upgrade-check`'s verdict, one function each, in the order the report lists
//! them. Apart from `mod.rs` (the report's types, the sides' versions and the text form) so that
//! each rule reads on its own.

use std::collections::BTreeSet;

use super::{ArchiveImport, Check, Input, IsoScan, Named, rule};
use crate::cloudstack::CloudStack;
use crate::diff::Side;
use crate::image::Reference;
use crate::release::KubeVersion;
use crate::release::kubeadm::Extras;

/// Check 1, CloudStack's rule: a later patch of the cluster's minor or the next minor; the step
/// taken when allowed.
pub(super) fn version_rule(from: &Named, to: &Named) -> (Check, Option<rule::Step>) {
    let mut step = None;
    let check = match (from.parsed, to.parsed) {
        (Some(f), Some(t)) => match rule::check(f, t) {
            Ok(s) => {
                step = Some(s);
                let kind = match s {
                    rule::Step::Patch => "a later patch of the same minor",
                    rule::Step::Minor => "the next minor",
                };
                pass(
                    "version rule",
                    format!(
                        "{} ({}) → {} ({}): {kind}, which CloudStack allows",
                        from.version.unwrap_or_default(),
                        from.from.words(),
                        to.version.unwrap_or_default(),
                        to.from.words()
                    ),
                )
            }
            Err(refused) => fail(
                "version rule",
                refused.to_string(),
                "CloudStack (canUpgradeKubernetesVersion) allows only a later patch of the \
                 cluster's minor or the next minor: upgrade through each minor in turn",
            ),
        },
        _ => {
            let which = if from.parsed.is_none() {
                from.label
            } else {
                to.label
            };
            fail(
                "version rule",
                format!(
                    "cannot tell {which}'s Kubernetes version: it has no cks-iso.lock, no \
                     versions.txt and no kube-apiserver image in docker/"
                ),
                "give the ISO the cluster was built from and the one it upgrades to, or their locks",
            )
        }
    };
    (check, step)
}

/// Check 2: one architecture on both sides.
pub(super) fn architecture(input: &Input, from_arches: &[String], to_arches: &[String]) -> Check {
    let same = match (from_arches, to_arches) {
        ([], _) | (_, []) => None,
        ([a], [b]) => Some(a == b),
        (a, b) => Some(a.iter().any(|x| b.contains(x))),
    };
    match same {
        Some(true) => pass(
            "architecture",
            format!("{} on both", common(from_arches, to_arches).join(", ")),
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
    }
}

/// Check 3: every archive of TO imports: upgrade-kubernetes.sh stops at the first that does not.
pub(super) fn archives(scan: &IsoScan) -> Check {
    let refused: Vec<&ArchiveImport> = scan
        .archives
        .iter()
        .filter(|a| a.outcome.is_err())
        .collect();
    match refused.first() {
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
                first
                    .outcome
                    .as_ref()
                    .err()
                    .map_or(String::new(), ToString::to_string),
                match refused.len() {
                    1 => String::new(),
                    n => format!(" (and {} more archive(s))", n - 1),
                }
            ),
            "rebuild TO (cks-iso build --locked TO), or replace the archive with a good \
             one of the same image; `cks-iso verify TO` names every problem",
        ),
    }
}

/// Checks 4 and 5: TO holds kubeadm's images for its version, and exactly the pause its kubeadm
/// and kubelet want.
pub(super) fn kubeadm_images(
    input: &Input,
    tk: Option<&KubeVersion>,
    arch: Option<&str>,
    checks: &mut Vec<Check>,
    notes: &mut Vec<String>,
) {
    let to_images = images_of(input.to, input.to_scan, arch);
    let extras = extras_of(input.to, tk);
    match (tk, &to_images) {
        (Some(t), Some(images)) => {
            let mut wanted = crate::release::kubeadm::images(
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
                checks.push(pause_check(input, t, extras, images, arch));
            }
        }
        _ => notes
            .push("TO's images or version are unknown: kubeadm's images were not checked".into()),
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

/// Check 6: TO suits the CloudStack release: its `verify` report, or for a lock, its manifests.
pub(super) fn cloudstack(input: &Input, release: Option<CloudStack>) -> Check {
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

/// The architectures both sides have.
pub(super) fn common(a: &[String], b: &[String]) -> Vec<String> {
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

/// The images a side bundles, normalised: what its archives record when read, else its lock's or
/// `versions.txt`'s list for `arch`.
pub(super) fn images_of(
    side: &Side,
    scan: Option<&IsoScan>,
    arch: Option<&str>,
) -> Option<BTreeSet<String>> {
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
