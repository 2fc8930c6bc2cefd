//! `cks-iso sync`: keeps a CloudStack zone's Kubernetes versions at a desired state, unattended.
//! The operator's loop — resolve each minor's newest patch, build what is missing, verify, check
//! the running clusters would upgrade, publish, register, retire the old — as one run that is safe
//! to repeat from cron: it looks before it acts ([`decide`], pure), acts only on what differs,
//! holds a lock so two runs do not both act ([`runlock`]), and reports per minor × arch
//! ([`report`]). The build is the pipeline's, its second caller after `build`: a
//! [`crate::pipeline::matrix::Matrix`] of one build per version on one shared cache, registry client and
//! checker ([`run()`]). Across an air gap the run is cut in two where a lock carries it ([`locks`]).

mod act;
pub mod decide;
mod desired;
mod failure;
pub mod locks;
pub mod report;
mod run;
mod runlock;

pub use desired::{Desired, DesiredError, SignHow};
pub use failure::GateError;
pub use run::{Context, Mode, Signing, SyncError};
pub use runlock::{LockError, RunLock};

use crate::pipeline::Build;
use report::{FORMAT, Report};
use run::Slot;

/// Runs a sync of `desired`; with `mode.plan`, only looks and says what a run would do. Here, in
/// the parent, because it drives both halves: `run.rs` (looking, deciding, settling) and
/// `act.rs` / `locks.rs` (acting, and wanting from locks), which use `run.rs` and not the other
/// way round.
pub fn run(desired: &Desired, ctx: &Context<'_>, mode: &Mode) -> Result<Report, SyncError> {
    let plan = mode.plan;
    let dir = &desired.publish.dir;
    if !plan {
        std::fs::create_dir_all(dir).map_err(|source| SyncError::PublishDir {
            path: dir.clone(),
            source,
        })?;
        for path in run::sweep(dir) {
            tracing::info!("removed {}, left by a sync that was killed", path.display());
        }
    }
    let rt = ctx.shared.runtime;
    let listed = rt.block_on(run::list(ctx.api, &desired.cloudstack.zones))?;
    let mut report = Report {
        format: FORMAT,
        plan,
        ..Report::default()
    };
    let build = Build::new(ctx.shared, ctx.reporter);
    let mut slots = Vec::new();
    for minor in desired.minors() {
        let wanted = match &mode.locks {
            Some(locks) => locks::wanted(&build, desired, &minor, locks),
            None => run::resolve(&build, desired, &minor),
        };
        match wanted {
            Ok(wanted) => slots.extend(
                wanted
                    .into_iter()
                    .map(|w| run::slot(w, desired, &listed, ctx)),
            ),
            Err(e) => report.items.push(locks::failed(&minor, &e)),
        }
    }
    let slots = slots.into_iter().collect::<Result<Vec<_>, _>>()?;
    let zone_ids: Vec<String> = listed.zones.iter().map(|z| z.0.clone()).collect();
    let mut slots: Vec<Slot> = slots
        .into_iter()
        .map(|(wanted, published, existing)| {
            let decision = decide::decide(&wanted, published.as_ref(), &existing, &zone_ids);
            run::start(wanted, decision, published, desired, &listed)
        })
        .collect();
    if plan {
        run::plan_all(&mut slots, desired, &listed);
    } else {
        act::build_all(ctx, desired, &mut slots);
        act::gate_all(ctx, desired, &listed, &mut slots);
        act::register_all(ctx, desired, &listed, &mut slots);
        act::retire_all(ctx, desired, &mut slots, &mut report);
    }
    for s in &mut slots {
        run::settle(&mut s.item, plan);
    }
    report.items.splice(0..0, slots.into_iter().map(|s| s.item));
    report.acted = report
        .items
        .iter()
        .any(|i| i.state != "current" && i.state != "failed")
        || report
            .items
            .iter()
            .any(|i| i.done.iter().any(|d| d != "failed"));
    report.ok = report.failed() == 0;
    Ok(report)
}
