//! The version labels dl.k8s.io publishes beside the releases (`release/stable-1.33.txt`,
//! `stable.txt`, `stable-1.txt`, `latest-1.33.txt`, `latest.txt`, `latest-1.txt`), each one line
//! naming a release with its `v` and no newline, computed from the releases a snapshot serves.
//!
//! As upstream does while the next minor is being released, `latest-1.<next>.txt` (and so
//! `latest.txt` and `latest-1.txt`) name a release candidate of the minor after the newest one
//! served, `v1.<next>.0-rc.1`, which has no `stable-1.<next>.txt`.

use std::collections::BTreeMap;

/// `(path after the host, body)` for every label of `versions` (`1.33.1`, without `v`).
pub fn release_labels(versions: &[&str]) -> Vec<(String, String)> {
    let mut newest: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for v in versions {
        let parts: Vec<u64> = v.split('.').filter_map(|p| p.parse().ok()).collect();
        if let [major, minor, patch] = parts[..] {
            let e = newest.entry((major, minor)).or_insert(patch);
            *e = (*e).max(patch);
        }
    }
    let mut out = Vec::new();
    let path = |label: &str| format!("dl.k8s.io/release/{label}.txt");
    for (&(major, minor), &patch) in &newest {
        let v = format!("v{major}.{minor}.{patch}");
        out.push((path(&format!("stable-{major}.{minor}")), v.clone()));
        out.push((path(&format!("latest-{major}.{minor}")), v));
    }
    if let Some((&(major, minor), &patch)) = newest.iter().next_back() {
        let stable = format!("v{major}.{minor}.{patch}");
        let rc = format!("v{major}.{}.0-rc.1", minor + 1);
        out.push((path("stable"), stable.clone()));
        out.push((path(&format!("stable-{major}")), stable));
        out.push((path(&format!("latest-{major}.{}", minor + 1)), rc.clone()));
        out.push((path("latest"), rc.clone()));
        out.push((path(&format!("latest-{major}")), rc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_minor_gets_its_newest_patch_and_the_next_minor_a_release_candidate() {
        let labels: BTreeMap<String, String> = release_labels(&["1.32.4", "1.33.1", "1.33.0"])
            .into_iter()
            .collect();
        let get = |l: &str| labels[&format!("dl.k8s.io/release/{l}.txt")].as_str();
        assert_eq!(get("stable-1.33"), "v1.33.1");
        assert_eq!(get("latest-1.33"), "v1.33.1");
        assert_eq!(get("stable-1.32"), "v1.32.4");
        assert_eq!(get("stable"), "v1.33.1");
        assert_eq!(get("stable-1"), "v1.33.1");
        assert_eq!(get("latest-1.34"), "v1.34.0-rc.1");
        assert_eq!(get("latest"), "v1.34.0-rc.1");
        assert!(!labels.contains_key("dl.k8s.io/release/stable-1.34.txt"));
    }
}
