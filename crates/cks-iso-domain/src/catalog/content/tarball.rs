//! Where a tar member lands when a node extracts the tarball as root into its directory: CNI
//! plugins into `/opt/cni/bin`, crictl into `/opt/bin`, etcd into its own tree. A member that is
//! absolute, holds `..`, or is a link leading out of that directory would write (or expose)
//! anything on the node, whatever its checksum says. Pure.

use tar::EntryType;

/// Why the member `name` (of `kind`, linking to `link`) is unsafe to extract, if it is.
pub(super) fn member_problem(name: &str, kind: EntryType, link: Option<String>) -> Option<String> {
    if name.starts_with('/') {
        return Some("is an absolute path".into());
    }
    if name.split('/').any(|c| c == "..") {
        return Some("climbs out of the tree with `..`".into());
    }
    let target = link.unwrap_or_default();
    let outside = |what: &str| Some(format!("is a {what} to {target:?}, outside the tree"));
    let escapes = match kind {
        // Resolved from the member's own directory.
        EntryType::Symlink => Some(("symbolic link", parts(name).len().saturating_sub(1))),
        // Resolved from the top of the tree.
        EntryType::Link => Some(("hard link", 0)),
        _ => None,
    };
    if let Some((what, depth)) = escapes
        && (target.starts_with('/') || climbs(depth, &target))
    {
        return outside(what);
    }
    None
}

/// The components of `path` that name something (not empty, not `.`).
fn parts(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Whether `path`, followed from `depth` directories below the top, ever goes above it.
fn climbs(mut depth: usize, path: &str) -> bool {
    for part in parts(path) {
        match part {
            ".." if depth == 0 => return true,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, kind: EntryType, link: &str) -> Option<String> {
        member_problem(name, kind, Some(link.to_owned()).filter(|l| !l.is_empty()))
    }

    #[test]
    fn members_and_links_must_stay_inside_the_tree() {
        for (name, kind, link) in [
            ("./bridge", EntryType::Regular, ""),
            ("etcd-v3.5.21-linux-amd64/etcd", EntryType::Regular, ""),
            ("./", EntryType::Directory, ""),
            ("./sub/b", EntryType::Symlink, "../bridge"),
            ("./sub/b", EntryType::Symlink, "c/./d"),
            ("./hard", EntryType::Link, "./bridge"),
            ("a..b", EntryType::Regular, ""),
        ] {
            assert_eq!(check(name, kind, link), None, "{name} -> {link}");
        }
        for (name, kind, link, says) in [
            ("/etc/x", EntryType::Regular, "", "absolute"),
            ("../x", EntryType::Regular, "", "`..`"),
            ("./a/../../x", EntryType::Regular, "", "`..`"),
            ("./a/..", EntryType::Directory, "", "`..`"),
            (
                "./passwd",
                EntryType::Symlink,
                "/etc/passwd",
                "symbolic link",
            ),
            ("./up", EntryType::Symlink, "..", "symbolic link"),
            ("./sub/up", EntryType::Symlink, "../../etc", "symbolic link"),
            ("./shadow", EntryType::Link, "/etc/shadow", "hard link"),
            ("./sub/h", EntryType::Link, "../x", "hard link"),
        ] {
            let problem = check(name, kind, link).unwrap_or_else(|| panic!("{name} passed"));
            assert!(problem.contains(says), "{name}: {problem}");
        }
    }
}
