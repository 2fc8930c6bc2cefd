//! The comparison itself: section by section, only what both sides know.

use std::collections::{BTreeMap, BTreeSet};

use similar::TextDiff;

use super::side::{BUILD_NAMES, VERSION_NAMES};
use super::{
    ArchChange, Change, ChangeKind, EntryInfo, EntryKind, FORMAT, FileInfo, ImageInfo, Kind,
    ManifestChange, ManifestInfo, Report, Side, SideSummary, Source,
};
use crate::contract;

/// Compares `a` (old) with `b` (new).
pub fn compare(a: &Side, b: &Side) -> Report {
    let build = BUILD_NAMES
        .iter()
        .filter_map(|name| match (a.build.get(*name), b.build.get(*name)) {
            (Some(x), Some(y)) if x != y => Change::new(name, Some(x.clone()), Some(y.clone())),
            _ => None,
        })
        .collect();
    let versions = VERSION_NAMES
        .iter()
        .filter_map(
            |name| match (a.versions.get(*name), b.versions.get(*name)) {
                (Some(x), Some(y)) if x != y => Change::new(name, x.clone(), y.clone()),
                _ => None,
            },
        )
        .collect();
    let arches = arch_pairs(a, b)
        .into_iter()
        .filter_map(|(x, y)| arch(a, b, x, y))
        .collect();
    let manifests = manifests(a, b);
    let entries = entries(a, b);
    let mut report = Report {
        format: FORMAT,
        identical: false,
        a: summary(a),
        b: summary(b),
        build,
        versions,
        arches,
        manifests,
        entries,
        unlike_lock: Vec::new(),
    };
    // An ISO compared with itself is reported once.
    for gap in a.gaps.iter().chain(&b.gaps) {
        if !report.unlike_lock.contains(gap) {
            report.unlike_lock.push(gap.clone());
        }
    }
    report.identical = report.unlike_lock.is_empty()
        && report.build.is_empty()
        && report.versions.is_empty()
        && report.arches.is_empty()
        && report.manifests.is_empty()
        && report.entries.is_empty()
        && same_signer(a, b);
    report
}

fn summary(side: &Side) -> SideSummary {
    SideSummary {
        path: side.label.clone(),
        kind: side.kind,
        source: side.source,
        arches: side.arches.keys().cloned().collect(),
        signature: side.signature.clone(),
    }
}

/// Whether both sides' signatures name the same signer; only two ISOs whose signatures were
/// looked at are compared (a lock has none).
fn same_signer(a: &Side, b: &Side) -> bool {
    match (&a.signature, &b.signature) {
        (Some(x), Some(y)) => x.same_signer(y),
        _ => true,
    }
}

/// Which architectures to compare with which: two single-arch sides with each other whatever
/// they are (an amd64 ISO with an arm64 one), an ISO with its arch of a lock of several,
/// otherwise by name. None when a side does not know.
fn arch_pairs<'s>(a: &'s Side, b: &'s Side) -> Vec<(Option<&'s str>, Option<&'s str>)> {
    if a.arches.is_empty() || b.arches.is_empty() {
        return Vec::new();
    }
    let first = |s: &'s Side| s.arches.keys().next().map(String::as_str);
    if a.arches.len() == 1 && b.arches.len() == 1 {
        return vec![(first(a), first(b))];
    }
    // An ISO holds one arch; a lock of several (`build --lock-file`) is compared on that one.
    let single_iso = |s: &'s Side| (s.kind == Kind::Iso && s.arches.len() == 1).then(|| first(s));
    match (single_iso(a).flatten(), single_iso(b).flatten()) {
        (Some(x), None) if b.arches.contains_key(x) => return vec![(Some(x), Some(x))],
        (None, Some(y)) if a.arches.contains_key(y) => return vec![(Some(y), Some(y))],
        _ => {}
    }
    let names: BTreeSet<&str> = a
        .arches
        .keys()
        .chain(b.arches.keys())
        .map(String::as_str)
        .collect();
    names
        .into_iter()
        .map(|n| {
            let has = |s: &Side| s.arches.contains_key(n).then_some(n);
            (has(a), has(b))
        })
        .collect()
}

fn arch(a: &Side, b: &Side, x: Option<&str>, y: Option<&str>) -> Option<ArchChange> {
    let (files, images) = match (x, y) {
        (Some(x), Some(y)) => {
            let (sa, sb) = (&a.arches[x], &b.arches[y]);
            (
                changes(&sa.files, &sb.files, file_differs),
                changes(&sa.images, &sb.images, image_differs),
            )
        }
        // An architecture only one side has: named, not listed item by item.
        _ => (Vec::new(), Vec::new()),
    };
    let same_arch = x.is_some() && x == y;
    if same_arch && files.is_empty() && images.is_empty() {
        return None;
    }
    Some(ArchChange {
        a: x.map(str::to_owned),
        b: y.map(str::to_owned),
        files,
        images,
    })
}

fn file_differs(x: &FileInfo, y: &FileInfo) -> bool {
    x.sha256 != y.sha256 || known_differ(x.size, y.size)
}

fn image_differs(x: &ImageInfo, y: &ImageInfo) -> bool {
    x.digest != y.digest
        || known_differ(x.manifest.as_ref(), y.manifest.as_ref())
        || known_differ(x.size, y.size)
}

/// Whether two facts differ, when both sides know them.
fn known_differ<T: PartialEq>(x: Option<T>, y: Option<T>) -> bool {
    matches!((x, y), (Some(x), Some(y)) if x != y)
}

/// Items only in A, only in B, or in both and `differs`, by name.
fn changes<T: Clone>(
    a: &BTreeMap<String, T>,
    b: &BTreeMap<String, T>,
    differs: impl Fn(&T, &T) -> bool,
) -> Vec<Change<T>> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| match (a.get(name), b.get(name)) {
            (Some(x), Some(y)) if !differs(x, y) => None,
            (x, y) => Change::new(name, x.cloned(), y.cloned()),
        })
        .collect()
}

fn manifests(a: &Side, b: &Side) -> Vec<ManifestChange> {
    let info = |m: &BTreeMap<String, String>| -> BTreeMap<String, ManifestInfo> {
        m.iter()
            .map(|(k, v)| (k.clone(), ManifestInfo { sha256: v.clone() }))
            .collect()
    };
    changes(&info(&a.manifests), &info(&b.manifests), |x, y| x != y)
        .into_iter()
        .map(|change| {
            let diff = match (a.texts.get(&change.name), b.texts.get(&change.name)) {
                (Some(x), Some(y)) => Some(unified(&change.name, x, y)),
                _ => None,
            };
            ManifestChange { change, diff }
        })
        .collect()
}

/// `--- a/PATH`, `+++ b/PATH` and hunks with 3 lines of context.
fn unified(path: &str, a: &str, b: &str) -> String {
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Files at an ISO's root that restate what the sections compare: a change in them is a change
/// already reported, so only their presence is an entry's business.
const RECORDS: [&str; 4] = [
    contract::VERSIONS,
    contract::LOCK,
    contract::SBOM_CYCLONEDX,
    contract::SBOM_SPDX,
];

/// Whether `path` is image signature evidence (`signatures/images/…`), which follows the images'
/// digests.
fn is_image_signature(path: &str) -> bool {
    path.strip_prefix(contract::SIGNATURES_PREFIX)
        .is_some_and(|rest| rest.starts_with("images/"))
}

/// ISO entries no other section speaks for: not a listed file or manifest, not a record that
/// merely changed, and, when both sides list their images, not in `docker/` nor the image
/// signature evidence in `signatures/images/` (which follows the images' digests).
fn entries(a: &Side, b: &Side) -> Vec<Change<EntryInfo>> {
    let (Some(ea), Some(eb)) = (&a.entries, &b.entries) else {
        return Vec::new();
    };
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    for side in [a, b] {
        covered.extend(side.manifests.keys().map(String::as_str));
        for arch in side.arches.values() {
            covered.extend(arch.files.keys().map(String::as_str));
        }
    }
    let images_known = a.source != Source::None && b.source != Source::None;
    let spoken_for = |c: &Change<EntryInfo>| {
        covered.contains(c.name.as_str())
            || (c.change == ChangeKind::Changed && RECORDS.contains(&c.name.as_str()))
            || (images_known
                && (c.name.starts_with(contract::IMAGES_PREFIX) || is_image_signature(&c.name)))
    };
    changes(ea, eb, entry_differs)
        .into_iter()
        .filter(|c| !spoken_for(c))
        .collect()
}

/// Kind and mode always; size for files and links (a directory's size is its sectors).
fn entry_differs(x: &EntryInfo, y: &EntryInfo) -> bool {
    x.kind != y.kind || x.mode != y.mode || (x.kind != EntryKind::Dir && x.size != y.size)
}
