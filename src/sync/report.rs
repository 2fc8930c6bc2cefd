//! What a sync found and did, per minor × arch: the text a person reads in a cron mail, and the
//! `--json` document (`format` [`FORMAT`]). `acted` tells a run that changed something from one
//! that found the zone as desired ("nothing to do"); `ok` is the exit status's meaning.

use serde::Serialize;

use super::decide::OnDisk;

/// The version of `sync --json`'s document.
pub const FORMAT: u32 = 1;

/// The whole run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: u32,
    /// `sync --plan`: what a run would do; nothing was changed.
    pub plan: bool,
    /// Whether anything was built, published, registered or retired (or would be, with `plan`).
    pub acted: bool,
    /// Whether the zone matches the desired state: nothing failed, nothing gated.
    pub ok: bool,
    /// Each minor × arch, in the desired state's order.
    pub items: Vec<Item>,
    /// What concerns no single item (a minor that did not resolve is an item with no arch).
    pub notes: Vec<String>,
    /// What failed outside any item (listing the versions to retire, a retirement's call).
    pub errors: Vec<String>,
}

/// One minor × arch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Item {
    /// `1.33`.
    pub minor: String,
    /// `x86_64` or `aarch64` (empty when the minor did not resolve).
    pub arch: String,
    /// The patch release (`1.33.1`), when resolved.
    pub kubernetes: Option<String>,
    /// Where it came from: `stable-1.33` or `pinned`.
    pub from: String,
    /// The version's name (the ISO's file name without `.iso`).
    pub name: String,
    /// The ISO's SHA-256, once known.
    pub sha256: Option<String>,
    /// What was there before.
    pub before: Before,
    /// What was done, in order: `built`, `verified`, `published`, `registered`, `gated`,
    /// `retired <name>`, `kept <name>`, `failed` (with `plan`: what would be).
    pub done: Vec<String>,
    /// `current` (nothing needed), `acted`, `gated`, `failed` (with `plan`: `would act`).
    pub state: String,
    /// Why: the errors, the gate's failed rules, what could not be checked, what was kept.
    pub why: Vec<String>,
}

/// What a minor × arch found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Before {
    /// What the publish directory held at its name: `absent`, `same`, `different`.
    pub published: Option<OnDisk>,
    /// The zones (names; `all` for the every-zone registration) it was registered in with this
    /// checksum.
    pub registered: Vec<String>,
}

impl Report {
    /// Whether any item failed or was gated.
    pub fn failed(&self) -> usize {
        let items = (self.items.iter())
            .filter(|i| i.state == "failed" || i.state == "gated")
            .count();
        items + self.errors.len()
    }

    /// The text for a person: a line per item, its reasons indented, then the verdict line.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for i in &self.items {
            let version = i.kubernetes.as_deref().unwrap_or("?");
            let done = match i.done.is_empty() {
                true => "nothing to do".to_owned(),
                false => i.done.join(", "),
            };
            let arch = if i.arch.is_empty() { "-" } else { &i.arch };
            out.push_str(&format!(
                "{:<6} {:<8} v{version:<9} {:<9} {}: {done}\n",
                i.minor, arch, i.state, i.name
            ));
            for why in &i.why {
                out.push_str(&format!("    {why}\n"));
            }
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        for error in &self.errors {
            out.push_str(&format!("error: {error}\n"));
        }
        out.push_str(&self.verdict());
        out.push('\n');
        out
    }

    /// The last line: what the run amounts to.
    pub fn verdict(&self) -> String {
        let failed = self.failed();
        let verb = if self.plan { "would act" } else { "acted" };
        match (failed, self.acted, self.plan) {
            (0, false, _) => "nothing to do: the zone matches the desired state".into(),
            (0, true, true) => format!("plan: a sync {verb} as above; nothing was changed"),
            (0, true, false) => "acted: the zone now matches the desired state".into(),
            (n, _, _) => format!(
                "{n} failed or gated (items and errors above): the zone does not match the desired \
                 state"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_tells_nothing_to_do_from_acted_and_failed() {
        let mut r = Report {
            format: FORMAT,
            ok: true,
            items: vec![Item {
                minor: "1.33".into(),
                arch: "x86_64".into(),
                kubernetes: Some("1.33.1".into()),
                state: "current".into(),
                ..Item::default()
            }],
            ..Report::default()
        };
        assert!(
            r.text()
                .ends_with("nothing to do: the zone matches the desired state\n")
        );
        r.acted = true;
        assert!(r.verdict().starts_with("acted"));
        r.items[0].state = "gated".into();
        assert!(r.verdict().starts_with("1 failed or gated"));
    }
}
