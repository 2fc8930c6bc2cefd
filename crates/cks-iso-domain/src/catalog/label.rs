//! Kubernetes version labels as kubeadm takes them (`stable-1.33`, `stable`, `stable-1`,
//! `latest-1.33`, `latest-1`; `1.33` for `stable-1.33`) and where dl.k8s.io publishes each. Reading
//! one is the network side's (`cks_iso::upstream::label`).

/// The label `text` names, or `None` when it is no label (a version, or something else that
/// the version parser will judge). `1.33` and `v1.33` are `stable-1.33`.
pub fn label(text: &str) -> Option<String> {
    let text = text.trim();
    let numbers = |s: &str, most: usize| {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() <= most
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let bare = text.strip_prefix('v').unwrap_or(text);
    if bare.split('.').count() == 2 && numbers(bare, 2) {
        return Some(format!("stable-{bare}"));
    }
    // `latest` alone is left out: it names whatever was released last, pre-releases included.
    for kind in ["stable", "latest"] {
        match text.strip_prefix(kind) {
            Some("") if kind == "stable" => return Some(text.to_owned()),
            Some(rest) if rest.strip_prefix('-').is_some_and(|v| numbers(v, 2)) => {
                return Some(text.to_owned());
            }
            _ => {}
        }
    }
    None
}

/// Where dl.k8s.io publishes `label`.
pub fn label_url(label: &str) -> String {
    format!("https://dl.k8s.io/release/{label}.txt")
}
