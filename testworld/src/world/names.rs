//! Names and versions the world derives: autoscaler tags, kubeadm's image list for a release,
//! the images a manifest names, and references normalised as cks-iso normalises them.

use super::*;

pub(super) fn minor_of(version: &str) -> Option<u64> {
    version
        .trim_start_matches('v')
        .split('.')
        .nth(1)?
        .parse()
        .ok()
}

pub(super) fn numbers(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.split('.');
    let parsed = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    it.next().is_none().then_some(parsed)
}

/// Tags for `versions` (annotated and lightweight alternately), an `-rc.1` above the newest, a
/// chart tag and a VPA tag.
pub(super) fn autoscaler_tags(versions: &[String]) -> Vec<(String, bool)> {
    let mut tags: Vec<(String, bool)> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("cluster-autoscaler-{v}"), i % 2 == 0))
        .collect();
    if let Some((a, b, c)) = versions.iter().filter_map(|v| numbers(v)).max() {
        tags.push((format!("cluster-autoscaler-{a}.{b}.{}-rc.1", c + 1), false));
    }
    tags.push(("cluster-autoscaler-chart-9.50.0".into(), false));
    tags.push(("vertical-pod-autoscaler-1.4.1".into(), true));
    tags
}

/// The newest `cluster-autoscaler-X.Y.Z` of Kubernetes' minor, compared numerically.
pub(super) fn newest_autoscaler(tags: &[&str], kubernetes: &str) -> Option<String> {
    let (major, minor, _) = numbers(kubernetes.split(['-', '+']).next()?)?;
    tags.iter()
        .filter_map(|t| numbers(t.strip_prefix("cluster-autoscaler-")?))
        .filter(|&(a, b, _)| (a, b) == (major, minor))
        .max()
        .map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

/// kubeadm's seven images for `kubernetes`, from the snapshot's `constants.go`.
pub(super) fn kubeadm_images(
    files: &BTreeMap<String, crate::upstream::File>,
    kubernetes: &str,
) -> Vec<(String, &'static str)> {
    let path = format!(
        "raw.githubusercontent.com/kubernetes/kubernetes/v{kubernetes}/cmd/kubeadm/app/constants/constants.go"
    );
    let mut go = String::from_utf8_lossy(
        &files
            .get(&path)
            .unwrap_or_else(|| panic!("the snapshot has no {path}"))
            .body,
    )
    .into_owned();
    // kubeadm 1.20 declares PauseVersion in constants_unix.go, beside constants.go.
    if let Some(unix) = files.get(&path.replace("constants.go", "constants_unix.go")) {
        go.push_str(&String::from_utf8_lossy(&unix.body));
    }
    let constant = |name: &str| {
        Regex::new(&format!(r#"\b{name}\s*=\s*"([^"]+)""#))
            .unwrap()
            .captures(&go)
            .map(|c| c[1].to_owned())
            .unwrap_or_else(|| panic!("{path} has no {name}"))
    };
    let (pause, coredns) = (constant("PauseVersion"), constant("CoreDNSVersion"));
    let (major, minor, patch) = numbers(kubernetes.split(['-', '+']).next().unwrap_or_default())
        .unwrap_or_else(|| panic!("not a Kubernetes version: {kubernetes}"));
    let map = go
        .split_once("SupportedEtcdVersion")
        .and_then(|(_, rest)| rest.split_once('{'))
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(body, _)| body.to_owned())
        .unwrap_or_default();
    // Keys are minors (`33:`) or, in every 1.35 release, the release's own minor plus a skew
    // (`uint8(getSkewedKubernetesVersion(-1).Minor()):`, kubernetes PR #134866).
    let entry = Regex::new(
        r#"(?:(\d+)|uint8\(getSkewedKubernetesVersion\((-?\d+)\)\.Minor\(\)\))\s*:\s*"([^"]+)""#,
    )
    .unwrap();
    let key = |c: &regex::Captures| match (c.get(1), c.get(2)) {
        (Some(m), _) => m.as_str().parse::<u64>().unwrap_or(0),
        (None, Some(skew)) => minor.saturating_add_signed(skew.as_str().parse().unwrap_or(0)),
        (None, None) => 0,
    };
    let etcd = entry
        .captures_iter(&map)
        .map(|c| (key(&c), c[3].to_owned()))
        .min_by_key(|(k, _)| (k.abs_diff(minor), u64::MAX - k))
        .map_or_else(|| constant("DefaultEtcdVersion"), |(_, v)| v);
    let new_repo =
        (major, minor) >= (1, 25) || matches!((minor, patch), (22, 17..) | (23, 15..) | (24, 9..));
    let repo = if major == 1 && !new_repo {
        "k8s.gcr.io"
    } else {
        "registry.k8s.io"
    };
    let tag = format!("v{}", kubernetes.replace('+', "_"));
    let mut out: Vec<String> = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ]
    .iter()
    .chain(&["kube-proxy"])
    .map(|c| format!("{repo}/{c}:{tag}"))
    .collect();
    let coredns = match minor <= 20 {
        true => format!("{repo}/coredns:{coredns}"),
        false => format!("{repo}/coredns/coredns:{coredns}"),
    };
    let (pause, etcd) = (
        format!("{repo}/pause:{pause}"),
        format!("{repo}/etcd:{etcd}"),
    );
    match minor >= 29 {
        true => out.extend([coredns, pause, etcd]),
        false => out.extend([pause, etcd, coredns]),
    }
    out.into_iter().map(|i| (i, "kubeadm")).collect()
}

/// Every `image:` value of a manifest, as written (quotes removed).
pub fn manifest_images(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("- ").map_or(line, str::trim_start);
            let value = line.strip_prefix("image:")?.trim();
            let value = value.split(" #").next().unwrap_or_default().trim();
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            (!value.is_empty()).then(|| value.to_owned())
        })
        .collect()
}

/// Docker's normalisation: `nginx` → `docker.io/library/nginx:latest`; digests kept.
pub fn normalise(reference: &str) -> String {
    let (name, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (reference, None),
    };
    let slash = name.find('/');
    let has_host = slash.is_some_and(|i| {
        let first = &name[..i];
        first.contains('.') || first.contains(':') || first == "localhost"
    });
    let mut full = match (has_host, slash) {
        (true, _) => name.to_owned(),
        (false, Some(_)) => format!("docker.io/{name}"),
        (false, None) => format!("docker.io/library/{name}"),
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && digest.is_none() {
        full.push_str(":latest");
    }
    if let Some(d) = digest {
        full.push('@');
        full.push_str(d);
    }
    full
}

/// `(repository, tag, digest)` of a normalised reference.
pub(super) fn split_reference(reference: &str) -> (String, Option<String>, Option<String>) {
    let (name, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d.to_owned())),
        None => (reference, None),
    };
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[slash..].split_once(':') {
        Some((_, tag)) => (
            name[..slash + name[slash..].find(':').unwrap()].to_owned(),
            Some(tag.to_owned()),
            digest,
        ),
        None => (name.to_owned(), None, digest),
    }
}
