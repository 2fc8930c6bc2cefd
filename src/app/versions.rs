//! `cks-iso versions list` and `versions retire`: CloudStack's Kubernetes supported versions,
//! shown with each zone's ISO state, and the old patch releases retired. Wiring only.

use std::time::Duration;

use serde_json::json;

use super::{AppError, net, register};
use crate::cli::{VersionsCommand, VersionsListArgs, VersionsRetireArgs};
use crate::cloudstack::api::SupportedVersion;
use crate::cloudstack::{retire, run};

/// The version of `versions list --json`'s and `versions retire --json`'s objects.
pub const FORMAT: u32 = 1;

/// Runs `versions …`.
pub fn run(command: VersionsCommand) -> Result<(), AppError> {
    match command {
        VersionsCommand::List(args) => list(args),
        VersionsCommand::Retire(args) => retire_cmd(args),
    }
}

fn list(args: VersionsListArgs) -> Result<(), AppError> {
    let settings = net::settings(args.net)?;
    let (api, _) = register::clients(&args.api, &settings)?;
    let runtime = net::transfer_runtime()?;
    let rows = runtime.block_on(async {
        let mut rows = Vec::new();
        for v in api.versions().await? {
            let zones = if v.isoid.is_empty() {
                Vec::new()
            } else {
                api.iso_zones(&v.isoid).await?
            };
            rows.push((v, zones));
        }
        Ok::<_, crate::cloudstack::ApiError>(rows)
    })?;
    if args.json {
        let versions: Vec<_> = rows
            .iter()
            .map(|(v, zones)| {
                json!({
                    "id": v.id, "name": v.name, "semanticversion": v.semanticversion,
                    "arch": crate::cloudstack::plan::listed_arch(v), "state": v.state,
                    "isostate": v.isostate, "mincpunumber": v.mincpunumber,
                    "minmemory": v.minmemory,
                    "zones": zones.iter().map(|z| json!({
                        "zoneid": z.zoneid, "zonename": z.zonename, "isready": z.isready,
                        "status": z.status,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let value = json!({ "format": FORMAT, "versions": versions });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("plain JSON")
        );
        return Ok(());
    }
    let table: Vec<[String; 6]> = rows
        .iter()
        .map(|(v, zones)| {
            let per_zone = crate::cloudstack::api::zones_line(&v.isostate, zones);
            [
                v.name.clone(),
                v.semanticversion.clone(),
                crate::cloudstack::plan::listed_arch(v).to_owned(),
                v.state.clone(),
                per_zone,
                v.id.clone(),
            ]
        })
        .collect();
    let head = ["NAME", "VERSION", "ARCH", "STATE", "ISO", "ID"].map(String::from);
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            std::iter::once(&head)
                .chain(&table)
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&head).chain(&table) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        crate::outln!("{}", cells.join("  ").trim_end());
    }
    Ok(())
}

fn retire_cmd(args: VersionsRetireArgs) -> Result<(), AppError> {
    let settings = net::settings(args.net)?;
    let (api, _) = register::clients(&args.api, &settings)?;
    let runtime = net::transfer_runtime()?;
    let poll = Duration::from_secs_f64(args.poll_interval.max(0.05));
    let done = runtime.block_on(async {
        let all: Vec<SupportedVersion> = api.versions().await?;
        let old = retire::select(&all, args.keep as usize);
        let timeout = Duration::from_secs(args.timeout);
        run::retire(&api, &old, args.retire, args.dry_run, poll, timeout).await
    })?;
    if args.json {
        let value = json!({ "format": FORMAT, "dry_run": args.dry_run, "retired": done });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("plain JSON")
        );
        return Ok(());
    }
    if done.is_empty() {
        crate::outln!(
            "nothing to retire: every minor has at most {} patch releases",
            args.keep
        );
    }
    for r in &done {
        let v = &r.version;
        crate::outln!(
            "{}  {} {}  {}  id {}",
            v.name,
            v.semanticversion,
            crate::cloudstack::plan::listed_arch(v),
            r.result,
            v.id
        );
        if r.result.starts_with("kept") {
            tracing::warn!("{} ({}) {}", v.name, v.id, r.result);
        }
    }
    Ok(())
}
