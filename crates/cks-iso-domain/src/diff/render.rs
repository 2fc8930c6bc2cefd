//! The human form: a section per kind of item, `-` only in A, `+` only in B, `~` in both but
//! different, digests cut to 12 hex digits (the JSON form has them whole).

use std::fmt::Write as _;

use super::{
    ArchChange, Change, ChangeKind, EntryInfo, EntryKind, FileInfo, ImageInfo, Kind, Report,
    SideSummary, Source,
};

/// The report as text; empty when A and B are identical.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    if report.identical {
        return out;
    }
    let _ = writeln!(out, "a: {}", describe(&report.a));
    let _ = writeln!(out, "b: {}", describe(&report.b));
    signatures(&mut out, report);
    section(&mut out, "build", &report.build, |v| v.clone());
    section(&mut out, "versions", &report.versions, |v| short(v));
    for arch in &report.arches {
        arch_section(&mut out, arch);
    }
    if !report.manifests.is_empty() {
        out.push_str("manifests:\n");
        for m in &report.manifests {
            let c = &m.change;
            line(&mut out, c, |x| short(&x.sha256));
            if let Some(diff) = &m.diff {
                for l in diff.lines() {
                    let _ = writeln!(out, "      {l}");
                }
            }
        }
    }
    section(&mut out, "entries", &report.entries, entry);
    if !report.unlike_lock.is_empty() {
        out.push_str("unlike its own lock:\n");
        for g in &report.unlike_lock {
            let _ = writeln!(out, "  ! {}: {}: {}", g.iso, g.path, g.problem);
        }
    }
    out
}

fn describe(side: &SideSummary) -> String {
    let kind = match side.kind {
        Kind::Iso => "ISO",
        Kind::Lock => "lock",
    };
    let arches = match side.arches.is_empty() {
        true => "arch unknown".to_owned(),
        false => side.arches.join(", "),
    };
    let source = match (side.kind, side.source) {
        (Kind::Lock, _) => "",
        (_, Source::Lock) => ", from its cks-iso.lock",
        (_, Source::VersionsTxt) => ", from its versions.txt: no cks-iso.lock",
        (_, Source::None) => ", no cks-iso.lock or versions.txt",
    };
    format!("{} ({kind}, {arches}{source})", side.path)
}

/// Who signed each ISO, when either was looked at: `signature:` and a line per side.
fn signatures(out: &mut String, report: &Report) {
    let sides = [("a", &report.a), ("b", &report.b)];
    if sides.iter().all(|(_, s)| s.signature.is_none()) {
        return;
    }
    out.push_str("signature:\n");
    for (name, side) in sides {
        if let Some(sig) = &side.signature {
            let _ = writeln!(out, "  {name}: {}", sig.words());
        }
    }
}

fn section<T>(out: &mut String, title: &str, items: &[Change<T>], show: impl Fn(&T) -> String) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}:");
    for c in items {
        line(out, c, &show);
    }
}

/// `  - name: old`, `  + name: new` or `  ~ name: old → new`.
fn line<T>(out: &mut String, c: &Change<T>, show: impl Fn(&T) -> String) {
    let (mark, text) = match (c.change, &c.a, &c.b) {
        (ChangeKind::Changed, Some(a), Some(b)) => ('~', arrow(&show(a), &show(b))),
        (ChangeKind::Removed, Some(a), _) => ('-', show(a)),
        (_, _, Some(b)) => ('+', show(b)),
        (_, Some(a), None) => ('-', show(a)),
        (_, None, None) => return,
    };
    let _ = writeln!(out, "  {mark} {}: {text}", c.name);
}

fn arrow(a: &str, b: &str) -> String {
    match a == b {
        true => a.to_owned(),
        false => format!("{a} → {b}"),
    }
}

fn arch_section(out: &mut String, arch: &ArchChange) {
    let label = match (&arch.a, &arch.b) {
        (Some(a), Some(b)) if a == b => a.clone(),
        (Some(a), Some(b)) => {
            let _ = writeln!(out, "arch: {a} → {b}");
            format!("{a} → {b}")
        }
        (Some(a), None) => {
            let _ = writeln!(out, "arch {a}: only in a");
            return;
        }
        (None, Some(b)) => {
            let _ = writeln!(out, "arch {b}: only in b");
            return;
        }
        (None, None) => return,
    };
    if !arch.images.is_empty() {
        let _ = writeln!(out, "images ({label}):");
        for c in &arch.images {
            image_line(out, c);
        }
    }
    section(out, &format!("files ({label})"), &arch.files, file);
}

/// Images show the registry digest and the platform manifest, old → new where they differ.
fn image_line(out: &mut String, c: &Change<ImageInfo>) {
    let one = |i: &ImageInfo| match &i.manifest {
        Some(m) => format!("{} (platform {})", short(&i.digest), short(m)),
        None => short(&i.digest),
    };
    let text = match (&c.a, &c.b) {
        (Some(a), Some(b)) => {
            let mut text = arrow(&short(&a.digest), &short(&b.digest));
            if let (Some(x), Some(y)) = (&a.manifest, &b.manifest) {
                let _ = write!(text, " (platform {})", arrow(&short(x), &short(y)));
            }
            if let (Some(x), Some(y)) = (a.size, b.size)
                && x != y
            {
                let _ = write!(text, ", {x} → {y} bytes");
            }
            format!("~ {}: {text}", c.name)
        }
        (Some(a), None) => format!("- {}: {}", c.name, one(a)),
        (None, Some(b)) => format!("+ {}: {}", c.name, one(b)),
        (None, None) => return,
    };
    // An add-on says so, and why it is there (the newer side's reason when both have one).
    let extra = [&c.b, &c.a]
        .into_iter()
        .find_map(|side| side.as_ref().and_then(|i| i.extra.as_deref()));
    match extra {
        Some(why) => {
            let _ = writeln!(out, "  {text} [add-on, {}]", crate::lock::extra_words(why));
        }
        None => {
            let _ = writeln!(out, "  {text}");
        }
    }
}

fn file(f: &FileInfo) -> String {
    match f.size {
        Some(size) => format!("{size} B {}", short(&f.sha256)),
        None => short(&f.sha256),
    }
}

fn entry(e: &EntryInfo) -> String {
    let kind = match e.kind {
        EntryKind::File => "file",
        EntryKind::Dir => return format!("dir {:04o}", e.mode),
        EntryKind::Symlink => "symlink",
        EntryKind::Other => "special",
    };
    format!("{kind} {} B {:04o}", e.size, e.mode)
}

/// `sha256:` and 12 hex digits for a digest or bare sha256; the first 12 of a commit; other
/// text as it is.
fn short(text: &str) -> String {
    let (prefix, hex) = match text.strip_prefix("sha256:") {
        Some(hex) => ("sha256:", hex),
        None => ("", text),
    };
    let is_hex = hex.len() >= 40 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    match (is_hex, hex.len()) {
        (true, 64) => format!("sha256:{}", &hex[..12]),
        (true, _) => format!("{prefix}{}", &hex[..12]),
        (false, _) => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn digests_and_commits_are_cut_to_twelve() {
        let hex = "0123456789abcdef".repeat(4);
        assert_eq!(short(&format!("sha256:{hex}")), "sha256:0123456789ab");
        assert_eq!(short(&hex), "sha256:0123456789ab");
        assert_eq!(short(&hex[..40]), "0123456789ab");
        assert_eq!(short("1.33.1"), "1.33.1");
    }
}
