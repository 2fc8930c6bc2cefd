//! Line-based edits that leave every other byte alone.

use super::ManifestError;

/// The RBAC appended to the autoscaler manifest (upstream.md §3): read access the CloudStack
/// example's ClusterRole lacks for newer autoscalers (VolumeAttachments from 1.32, DRA objects
/// from 1.35), bound to the autoscaler's ServiceAccount. Starts with a blank line and `---`, so
/// it can never join a last line that has no newline.
pub const AUTOSCALER_EXTRA: &str = "
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cluster-autoscaler-extra
  labels:
    k8s-addon: cluster-autoscaler.addons.k8s.io
    k8s-app: cluster-autoscaler
rules:
  - apiGroups: [\"storage.k8s.io\"]
    resources: [\"volumeattachments\"]
    verbs: [\"watch\", \"list\", \"get\"]
  - apiGroups: [\"resource.k8s.io\"]
    resources: [\"deviceclasses\", \"resourceslices\", \"resourceclaims\"]
    verbs: [\"watch\", \"list\", \"get\"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cluster-autoscaler-extra
  labels:
    k8s-addon: cluster-autoscaler.addons.k8s.io
    k8s-app: cluster-autoscaler
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-autoscaler-extra
subjects:
  - kind: ServiceAccount
    name: cluster-autoscaler
    namespace: kube-system
";

/// The key of an `image:` line (`image:` or `- image:`), and where its value starts.
fn image_value_start(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    let rest = trimmed
        .strip_prefix("- ")
        .map(str::trim_start)
        .unwrap_or(trimmed);
    let offset = line.len() - rest.len();
    let after = rest.strip_prefix("image:")?;
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    Some(offset + "image:".len())
}

/// Splits text into lines keeping their terminators.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
}

/// Replaces the value of the one `image:` line with `image`, keeping indentation, the `- ` and
/// any trailing comment's absence/presence of a newline. Zero or several lines → error.
pub fn pin_single_image(name: &str, text: &str, image: &str) -> Result<String, ManifestError> {
    let found: Vec<usize> = lines(text)
        .enumerate()
        .filter(|(_, l)| image_value_start(l).is_some())
        .map(|(i, _)| i + 1)
        .collect();
    if found.len() != 1 {
        return Err(ManifestError::ImageCount {
            name: name.to_owned(),
            count: found.len(),
            lines: found,
        });
    }
    let mut out = String::with_capacity(text.len() + image.len());
    for line in lines(text) {
        match image_value_start(line) {
            Some(start) => {
                let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
                out.push_str(&line[..start]);
                out.push(' ');
                out.push_str(image);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    Ok(out)
}

/// Rewrites every `imagePullPolicy:` value to `IfNotPresent`; returns the text and how many
/// lines changed.
pub fn pull_if_not_present(text: &str) -> (String, usize) {
    let mut changed = 0;
    let mut out = String::with_capacity(text.len());
    for line in lines(text) {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let trimmed = body.trim_start();
        let rest = trimmed
            .strip_prefix("- ")
            .map(str::trim_start)
            .unwrap_or(trimmed);
        match rest.strip_prefix("imagePullPolicy:") {
            Some(value) => {
                let key_end = body.len() - value.len();
                let value = value.split('#').next().unwrap_or("").trim();
                if value != "IfNotPresent" {
                    changed += 1;
                }
                out.push_str(&body[..key_end]);
                out.push_str(" IfNotPresent");
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    (out, changed)
}

/// A line where a document separator was glued to the end of the previous line
/// (`…rbac.authorization.k8s.io---`), merging two documents into one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedSeparator {
    /// 1-based line number.
    pub line: usize,
    /// The line's text.
    pub text: String,
}

fn joined_at(body: &str) -> Option<usize> {
    let stripped = body.trim_end();
    let head = stripped.strip_suffix("---")?;
    // A real separator is `---` alone; `- ---` or a quoted scalar is not our defect.
    let head_trim = head.trim();
    if head_trim.is_empty() || head.ends_with('-') || head_trim.starts_with('#') {
        return None;
    }
    Some(head.len())
}

/// Every joined separator in `text`.
pub fn find_joined_separators(text: &str) -> Vec<JoinedSeparator> {
    lines(text)
        .enumerate()
        .filter_map(|(i, l)| {
            let body = l.trim_end_matches(['\n', '\r']);
            joined_at(body).map(|_| JoinedSeparator {
                line: i + 1,
                text: body.to_owned(),
            })
        })
        .collect()
}

/// Splits each joined separator back onto its own line: `x---` becomes `x` and `---`.
pub fn split_joined_separators(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for line in lines(text) {
        let body = line.trim_end_matches(['\n', '\r']);
        match joined_at(body) {
            Some(at) => {
                out.push_str(body[..at].trim_end());
                out.push('\n');
                out.push_str("---");
                // The line's own ending (none on a last line without newline) stays.
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The autoscaler manifest with the extra RBAC appended.
pub fn append_autoscaler_extra(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + AUTOSCALER_EXTRA.len() + 1);
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(AUTOSCALER_EXTRA);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTOSCALER: &str = "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - image: apache/cloudstack-kubernetes-autoscaler:latest\n          imagePullPolicy: Always\n          command:\n            - ./cluster-autoscaler\n            - --nodes=<min>:<max>:<cluster-id>";

    #[test]
    fn pins_the_one_image_keeping_dash_indent_and_placeholders() {
        let out = pin_single_image(
            "autoscaler.yaml",
            AUTOSCALER,
            "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6",
        )
        .unwrap();
        assert!(out.contains("        - image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6\n          imagePullPolicy"));
        assert!(out.contains("--nodes=<min>:<max>:<cluster-id>"));
        assert_eq!(out.lines().count(), AUTOSCALER.lines().count());
        assert!(
            !out.ends_with('\n'),
            "other bytes untouched, including a missing final newline"
        );
    }

    #[test]
    fn zero_or_two_image_lines_are_an_error_naming_the_lines() {
        let err = pin_single_image("provider.yaml", "kind: A\n", "x").unwrap_err();
        assert!(err.to_string().contains("0 `image:` lines"), "{err}");
        let two = "image: a\nfoo:\n  image: b\n";
        let err = pin_single_image("provider.yaml", two, "x")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 `image:` lines") && err.contains("lines 1, 3"),
            "{err}"
        );
        // Keys that merely end in "image" are not image lines.
        assert!(pin_single_image("p", "baseimage: x\nimage: y\n", "z").is_ok());
    }

    #[test]
    fn every_pull_policy_becomes_if_not_present() {
        let text = "a:\n  imagePullPolicy: Always\n  - imagePullPolicy: Never # why\nimagePullPolicy: IfNotPresent\r\n";
        let (out, changed) = pull_if_not_present(text);
        assert_eq!(changed, 2);
        assert_eq!(
            out,
            "a:\n  imagePullPolicy: IfNotPresent\n  - imagePullPolicy: IfNotPresent\nimagePullPolicy: IfNotPresent\r\n"
        );
    }

    #[test]
    fn joined_separators_are_found_and_split() {
        let text = "kind: A\napiGroup: rbac.authorization.k8s.io---\nkind: B\n---\n# ---\n";
        let found = find_joined_separators(text);
        assert_eq!(
            found,
            [JoinedSeparator {
                line: 2,
                text: "apiGroup: rbac.authorization.k8s.io---".into()
            }]
        );
        assert_eq!(
            split_joined_separators(text),
            "kind: A\napiGroup: rbac.authorization.k8s.io\n---\nkind: B\n---\n# ---\n"
        );
    }

    #[test]
    fn extra_rbac_starts_on_its_own_line_even_without_final_newline() {
        let out = append_autoscaler_extra("kind: Deployment");
        assert!(out.starts_with("kind: Deployment\n\n---\napiVersion"));
        assert!(
            !AUTOSCALER_EXTRA.contains('<'),
            "no placeholders in the appended text"
        );
    }
}
