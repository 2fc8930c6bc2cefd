//! `build`'s summary on stdout: each ISO with its registration line, the versions built, and with
//! several releases which failed; or the same as one `--json` document.

use serde_json::{Value, json};

use super::AppError;
use crate::cloudstack::IsoToRegister;
use crate::cloudstack::line::{Registration, publish_base};
use crate::pipeline::{Built, Outcome};
use crate::ui::Ui;

/// The version of `build --json`'s document (its `format` field).
pub const FORMAT: u32 = 1;

/// The summary of one build: the text, or the `--json` document.
pub(super) fn one(built: &Built, publish: Option<&str>, json: bool) {
    if json {
        let mut value = document(built, publish);
        value["format"] = FORMAT.into();
        print_json(&value);
        return;
    }
    let registrations = text(built, publish);
    print_registrations(&registrations);
}

/// The summary of several builds, in the order asked: each one built as [`one`] says it, then
/// each failure on one line; with `json`, `{"format", "builds": [...], "failed": [...]}`.
pub(super) fn several(outcomes: &[Outcome], publish: Option<&str>, json: bool) {
    let failed = outcomes
        .iter()
        .filter_map(|o| Some((o, o.result.as_ref().err()?)));
    if json {
        let builds: Vec<Value> = (outcomes.iter())
            .filter_map(|o| {
                let mut value = document(o.result.as_ref().ok()?, publish);
                value["asked"] = o.asked.as_str().into();
                Some(value)
            })
            .collect();
        let failed: Vec<Value> = failed
            .map(|(o, e)| {
                let error = crate::failure::one_line(e);
                let hint = crate::failure::advice(e, e.hint());
                json!({"asked": o.asked, "error": error, "hint": hint, "usage": e.is_usage()})
            })
            .collect();
        print_json(&json!({"format": FORMAT, "builds": builds, "failed": failed}));
        return;
    }
    let mut registrations = Vec::new();
    for built in outcomes.iter().filter_map(|o| o.result.as_ref().ok()) {
        registrations.extend(text(built, publish));
    }
    print_registrations(&registrations);
    for (o, e) in failed {
        crate::outln!("{} FAILED: {}", o.asked, crate::failure::one_line(e));
    }
}

/// One build's fields: its ISOs (each with its registration), its versions and summary line.
fn document(built: &Built, publish: Option<&str>) -> Value {
    let (versions, fields) = built.versions();
    let isos: Vec<_> = (built.isos.iter())
        .map(|b| {
            let r = Registration::of(&IsoToRegister::from(b), publish);
            json!({
                "iso": b.path, "arch": b.arch.k8s(), "size": b.size, "sha256": b.sha256,
                "images": b.images, "files": b.files, "registration": r.json(),
            })
        })
        .collect();
    json!({"isos": isos, "versions": fields, "summary": versions})
}

/// Prints each ISO of `built` and its versions line; its registrations, to print after.
fn text(built: &Built, publish: Option<&str>) -> Vec<Registration> {
    for b in &built.isos {
        let size = indicatif::HumanBytes(b.size);
        let (arch, sha) = (b.arch.k8s(), &b.sha256[..16]);
        let counts = format!("{} images, {} files", b.images, b.files);
        crate::outln!(
            "{}  {size} ({arch}, {counts}, sha256 {sha})",
            b.path.display()
        );
    }
    crate::outln!("{}", built.versions().0);
    (built.isos.iter())
        .map(|b| Registration::of(&IsoToRegister::from(b), publish))
        .collect()
}

fn print_registrations(registrations: &[Registration]) {
    if registrations.is_empty() {
        return;
    }
    crate::outln!("register each ISO with CloudStack (addKubernetesSupportedVersion):");
    for r in registrations {
        crate::outln!("  {}", r.cmk());
    }
}

fn print_json(value: &Value) {
    let text = serde_json::to_string_pretty(value).expect("plain JSON");
    crate::outln!("{text}");
}

/// The builds made, and if any failed, the error counting them and naming each release that did
/// (each failure said first on stderr as any error is, its release first, with its hint).
pub(super) fn split(outcomes: Vec<Outcome>, ui: &Ui) -> (Vec<Built>, Option<AppError>) {
    let (mut built, mut failed) = (Vec::new(), Vec::new());
    for o in outcomes {
        match o.result {
            Ok(b) => built.push(b),
            Err(e) => {
                let err = AppError::from(e);
                let (top, causes) = err.lines();
                ui.error(
                    &format!("{}: {top}", o.asked),
                    &causes,
                    err.advice().as_deref(),
                );
                failed.push(o.asked);
            }
        }
    }
    if failed.is_empty() {
        return (built, None);
    }
    let count = built.len() + failed.len();
    let hint = match built.is_empty() {
        true => "each error above names its release, its cause and what to do",
        false => {
            "each error above names its release, its cause and what to do; the other releases' \
             ISOs were written, and a build of the failed ones after the fix downloads only what \
             is missing"
        }
    };
    let error = AppError::failure(
        anyhow::anyhow!(
            "{} of {count} builds failed: {}",
            failed.len(),
            failed.join(", ")
        ),
        Some(hint.into()),
    );
    (built, Some(error))
}

/// `--publish-url`, checked.
pub(super) fn publish(given: Option<&str>) -> Result<Option<String>, AppError> {
    Ok(publish_base(given)?)
}
