//! What a sync does once it has decided: build what is missing (the pipeline's [`Matrix`], one
//! build per version with its missing arches, every version at once; each arch alone when that
//! fails, so one arch's failure is its own),
//! verify and publish each ISO atomically, gate each candidate on the clusters that run, register
//! what passed and retire beyond `keep`. Every step records its outcome in the slot's report item
//! and goes on with the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::decide;
use super::desired::Desired;
use super::failure::{ItemError, error_text};
use super::report::{Item, Report};
use super::run::{
    Context, Listed, STAGING_PREFIX, Signing, Slot, carried, in_use, is_pinned, options, slot_of,
};
use crate::cloudstack::IsoToRegister;
use crate::cloudstack::plan::listed_arch;
use crate::cloudstack::run::{self as registering, Options, Target};
use crate::pipeline::matrix::Matrix;
use crate::pipeline::{BuildOptions, Built, RequestOptions, Setup};
use crate::trust::sign::Signers;
use cks_iso_sigstore::TrustedRoot;

/// Builds every slot that needs it through the pipeline's [`Matrix`]: one build per version
/// (all its missing arches at once), every version at the same time on the one [`Shared`] of
/// the run; the versions whose build failed are built again each arch alone (a second matrix),
/// so one arch's failure is that arch's only. Each ISO is verified and published.
///
/// [`Shared`]: crate::pipeline::Shared
pub(super) fn build_all(ctx: &Context<'_>, desired: &Desired, slots: &mut [Slot]) {
    let matrix = Matrix::new(ctx.shared, ctx.reporter);
    let mut versions: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate().filter(|(_, s)| s.decision.build) {
        versions
            .entry(s.wanted.version.clone())
            .or_default()
            .push(i);
    }
    let mut alone = Vec::new();
    let signing = ctx.signing;
    let groups = versions.into_values().collect();
    for (group, why) in build_round(&matrix, desired, signing, slots, groups) {
        match group.len() {
            1 => fail(&mut slots[group[0]].item, why),
            _ => alone.extend(group.iter().map(|i| vec![*i])),
        }
    }
    for (group, why) in build_round(&matrix, desired, signing, slots, alone) {
        fail(&mut slots[group[0]].item, why);
    }
}

pub(super) fn fail(item: &mut Item, why: String) {
    item.done.push("failed".into());
    item.why.push(why);
}

/// Builds each group of slots (one version, some arches) at the same time, each into a staging
/// directory of its own inside the publish directory, then verifies and publishes each ISO;
/// the groups whose build failed, with why.
fn build_round(
    matrix: &Matrix<'_>,
    desired: &Desired,
    signing: Signing<'_>,
    slots: &mut [Slot],
    groups: Vec<Vec<usize>>,
) -> Vec<(Vec<usize>, String)> {
    let mut failed = Vec::new();
    let (mut staged, mut setups) = (Vec::new(), Vec::new());
    for group in groups {
        match setup(desired, signing, slots, &group) {
            Ok((staging, setup)) => {
                setups.push((slots[group[0]].wanted.version.clone(), setup));
                staged.push((group, staging));
            }
            Err(e) => failed.push((group, e.text())),
        }
    }
    if setups.is_empty() {
        return failed;
    }
    let outcomes = matrix.build(setups);
    for ((group, staging), outcome) in staged.into_iter().zip(outcomes) {
        match outcome.result {
            Ok(built) => publish_built(desired, slots, &group, &built),
            Err(e) => failed.push((group, error_text(&e, e.hint()))),
        }
        drop(staging);
    }
    failed
}

/// The build of the slots `group` (one version): its staging directory inside the publish
/// directory, and its setup — the desired state's request for that version and those arches, or
/// with `sync --locks` exactly its lock, its content first taken from the ISOs already published;
/// each ISO signed with `sign-key` (entered in Rekor with `tlog: true`), or keyless (`sign:
/// keyless`), as `signing` says.
fn setup(
    desired: &Desired,
    signing: Signing<'_>,
    slots: &[Slot],
    group: &[usize],
) -> Result<(tempfile::TempDir, Setup), ItemError> {
    let dir = &desired.publish.dir;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(dir)
        .map_err(|source| ItemError::Staging {
            dir: dir.clone(),
            source,
        })?;
    let first = &slots[group[0]].wanted;
    let label = (!is_pinned(desired, first)).then(|| format!("stable-{}", first.minor));
    let arches = group.iter().map(|i| slots[*i].wanted.arch.k8s().to_owned());
    // With a lock the options only repeat it: the arches to build, the release it is for.
    let mut request = match &first.locked {
        Some(_) => RequestOptions {
            cloudstack: Some(desired.cloudstack.release.clone()),
            ..RequestOptions::default()
        },
        None => options(desired, first.version.clone(), label),
    };
    request.arches = arches.collect();
    request.output = Some(staging.path().to_owned());
    let options = BuildOptions {
        request,
        locked: first.locked.clone(),
        from_iso: match &first.locked {
            Some(_) => super::locks::from_isos(dir),
            None => Vec::new(),
        },
        sign_key: desired.sign_key.clone(),
        keyless: signing.keyless.cloned(),
        tlog: signing.tlog.cloned(),
        ..BuildOptions::default()
    };
    let setup = Setup::new(&options)?;
    Ok((staging, setup))
}

/// Verifies each ISO `built` for the slots `group` and renames its files to their served names.
fn publish_built(desired: &Desired, slots: &mut [Slot], group: &[usize], built: &Built) {
    let dir = &desired.publish.dir;
    let release = crate::cloudstack::CloudStack::parse(&desired.cloudstack.release).ok();
    for b in &built.isos {
        let Some(&i) = group.iter().find(|i| slots[**i].wanted.arch == b.arch) else {
            continue;
        };
        let s = &mut slots[i];
        s.item.done.push("built".into());
        s.item.sha256 = Some(b.sha256.to_ascii_lowercase());
        let expect = crate::verify::Expect {
            cloudstack: release,
            ..crate::verify::Expect::default()
        };
        match crate::verify::verify(&b.path, &expect) {
            Ok(r) if r.violations.is_empty() => s.item.done.push("verified".into()),
            Ok(r) => {
                let lines: Vec<String> = r
                    .violations
                    .iter()
                    .map(|v| format!("{}: {}", v.path, v.problem))
                    .collect();
                fail(&mut s.item, format!("verify: {}", lines.join("; ")));
                continue;
            }
            Err(e) => {
                fail(&mut s.item, format!("verify: {e}"));
                continue;
            }
        }
        let served = dir.join(&s.wanted.file);
        if let Err(e) = publish(&b.path, &served) {
            fail(&mut s.item, format!("publish {}: {e}", served.display()));
            continue;
        }
        s.item.done.push("published".into());
        let mut iso = IsoToRegister::from(b);
        iso.path = served;
        s.iso = Some(iso);
    }
}

/// Moves the ISO at `built` and the files beside it (SBOMs, signatures, `.sha256`) to `served`
/// and beside it, each by a rename, so a served name is never a partial file: the SBOMs and
/// signatures first, then the ISO, then its `.sha256`, which [`super::run()`] reads as "a whole
/// ISO is here" (an old `.sha256` is removed before the ISO is replaced).
fn publish(built: &Path, served: &Path) -> std::io::Result<()> {
    let beside = |base: &Path, suffix: &str| {
        let mut name = base.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    // An old ISO at the name goes first, so its .sha256 is never read beside the new one.
    let _ = std::fs::remove_file(beside(served, ".sha256"));
    for suffix in [".cdx.json", ".spdx.json"] {
        std::fs::rename(beside(built, suffix), beside(served, suffix))?;
    }
    // The signatures `sign-key` wrote, when it did.
    for suffix in [
        crate::trust::sign::SIG_SUFFIX,
        crate::trust::sign::BUNDLE_SUFFIX,
    ] {
        let _ = std::fs::remove_file(beside(served, suffix));
        if beside(built, suffix).exists() {
            std::fs::rename(beside(built, suffix), beside(served, suffix))?;
        }
    }
    std::fs::rename(built, served)?;
    std::fs::rename(beside(built, ".sha256"), beside(served, ".sha256"))?;
    if let Some(parent) = served.parent()
        && let Ok(d) = std::fs::File::open(parent)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The gate: for every cluster, the candidates it may upgrade to judged from the ISO of the
/// version it runs; a candidate that fails for any cluster is not registered.
pub(super) fn gate_all(ctx: &Context<'_>, desired: &Desired, listed: &Listed, slots: &mut [Slot]) {
    for s in slots
        .iter_mut()
        .filter(|s| s.decision.register && s.iso.is_some())
    {
        let to = s.iso.as_ref().map(|i| i.path.clone()).unwrap_or_default();
        for c in &listed.clusters {
            let Some(running) = listed
                .versions
                .iter()
                .find(|v| v.id == c.kubernetesversionid)
            else {
                s.item.why.push(format!(
                    "cluster {}: its version {} is not listed; not checked",
                    c.name, c.kubernetesversionid
                ));
                continue;
            };
            if listed_arch(running) != s.wanted.arch.uname()
                || !decide::may_upgrade(&running.semanticversion, &s.wanted.version)
            {
                continue;
            }
            let from = desired.publish.dir.join(format!("{}.iso", running.name));
            if !from.is_file() {
                s.item.why.push(format!(
                    "cluster {} runs {} ({}): no ISO of it in the publish directory, so its upgrade to v{} was not checked",
                    c.name, running.name, running.semanticversion, s.wanted.version
                ));
                continue;
            }
            match (ctx.gate)(&from, &to) {
                Ok(r) if r.ok => s.item.why.push(format!(
                    "cluster {} on v{}: upgrade-check passed",
                    c.name, running.semanticversion
                )),
                Ok(r) => {
                    let failed: Vec<String> = (r.checks.iter())
                        .filter(|c| !c.ok)
                        .map(|c| format!("{}: {}", c.check, c.detail))
                        .collect();
                    s.item.done.push("gated".into());
                    s.item.why.push(format!(
                        "gated: cluster {} on v{} would not upgrade ({}); kept in the publish directory, not registered",
                        c.name, running.semanticversion, failed.join("; ")
                    ));
                    s.decision.register = false;
                }
                Err(why) => {
                    fail(
                        &mut s.item,
                        format!(
                            "upgrade-check from {}: {}",
                            from.display(),
                            error_text(&*why, None)
                        ),
                    );
                    s.decision.register = false;
                }
            }
        }
    }
}

/// Registers every slot that needs it, each alone (one's failure is its own), waiting for Ready
/// in every zone.
pub(super) fn register_all(
    ctx: &Context<'_>,
    desired: &Desired,
    listed: &Listed,
    slots: &mut [Slot],
) {
    let cs = &desired.cloudstack;
    let opts = Options {
        min_cpu: cs.min_cpu,
        min_memory: cs.min_memory,
        zones: listed.zones.iter().map(|z| z.0.clone()).collect(),
        replace: true,
        retire: registering::Retire::Disable,
        wait: true,
        timeout: ctx.timeout,
        poll: ctx.poll,
    };
    let base = desired.publish.url.trim_end_matches('/');
    for s in slots.iter_mut().filter(|s| s.decision.register) {
        let Some(iso) = s.iso.clone() else { continue };
        if let Some((signers, root)) = ctx.signers
            && let Err(e) = signed(&iso, signers, root)
        {
            fail(&mut s.item, e.text());
            continue;
        }
        let target = Target {
            url: format!("{base}/{}", s.wanted.file),
            iso,
        };
        let run = registering::register(ctx.api, ctx.http, std::slice::from_ref(&target), &opts);
        match ctx.shared.runtime.block_on(run) {
            Ok(outcomes) => {
                let zones: Vec<String> = (outcomes.iter())
                    .map(|o| {
                        format!(
                            "{} {}",
                            if o.zone.is_empty() {
                                "all zones"
                            } else {
                                &o.zone
                            },
                            o.isostate
                        )
                    })
                    .collect();
                s.item
                    .done
                    .push(format!("registered ({})", zones.join(", ")));
                for o in outcomes.iter().flat_map(|o| &o.retired) {
                    s.item.done.push(format!("replaced {o}"));
                }
            }
            Err(e) => fail(&mut s.item, error_text(&e, e.hint())),
        }
    }
}

/// Whether `iso` is signed by one of `signers` (its bundle beside it, judged offline against
/// `root`), with the SHA-256 already known of it: `register`'s rule, applied before CloudStack is
/// told anything of this ISO.
fn signed(iso: &IsoToRegister, signers: &Signers, root: &TrustedRoot) -> Result<(), ItemError> {
    let digest = cks_iso_io::Sha256Sum::parse_hex(&iso.sha256)?;
    match signers.check(&iso.path, digest.as_bytes(), root, crate::trust::now()) {
        Ok(s) => {
            let when = crate::trust::sign::when(s.when);
            tracing::info!("{}: signed by {}, {when}", iso.path.display(), s.signer);
            Ok(())
        }
        Err(refused) => Err(ItemError::from(Box::new(refused))),
    }
}

/// Retires, per carried minor × arch, the enabled versions beyond `keep` (never one a cluster
/// uses; CloudStack's refusal of a delete is reported, not fatal).
pub(super) fn retire_all(
    ctx: &Context<'_>,
    desired: &Desired,
    slots: &mut [Slot],
    report: &mut Report,
) {
    let rt = ctx.shared.runtime;
    let versions = match rt.block_on(ctx.api.versions()) {
        Ok(v) => v,
        Err(e) => {
            report
                .errors
                .push(format!("retire: {}", error_text(&e, e.hint())));
            return;
        }
    };
    let old = decide::retirements(&versions, &[], desired.keep, &carried(slots));
    let clusters = match rt.block_on(ctx.api.clusters()) {
        Ok(c) => c,
        Err(e) => {
            report
                .errors
                .push(format!("retire: {}", error_text(&e, e.hint())));
            return;
        }
    };
    let old = in_use(slots, old, &clusters);
    if old.is_empty() {
        return;
    }
    let how = desired.cloudstack.retire.retire();
    match rt.block_on(registering::retire(
        ctx.api,
        &old,
        how,
        false,
        ctx.poll,
        ctx.timeout,
    )) {
        Ok(done) => {
            for r in done {
                let v = &r.version;
                let line = match r.result.strip_prefix("kept: ") {
                    Some(why) => format!("kept {} ({}): {why}", v.name, v.id),
                    None => format!("retired {} ({}: {})", v.name, v.id, r.result),
                };
                if let Some(s) = slot_of(slots, v) {
                    s.item.done.push(line);
                }
            }
        }
        Err(e) => report
            .errors
            .push(format!("retire: {}", error_text(&e, e.hint()))),
    }
}
