//! Line-based edits that leave every other byte alone.

use super::ManifestError;

/// The RBAC appended to the autoscaler manifest (docs/reference/upstream.md §3): read access the
/// CloudStack example's ClusterRole lacks for newer autoscalers (VolumeAttachments from 1.32, DRA
/// objects from 1.35), bound to the autoscaler's ServiceAccount. Starts with a blank line and
/// `---`, so it can never join a last line that has no newline.
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

/// Every `image:` line of `text` (`image:` or `- image:`, block style) with its 1-based number
/// and its value as written, quotes and a trailing comment removed.
pub fn image_lines(text: &str) -> Vec<(usize, String)> {
    lines(text)
        .enumerate()
        .filter_map(|(i, line)| {
            let start = image_value_start(line)?;
            let value = line[start..].trim();
            let value = match value.strip_prefix(['"', '\'']) {
                Some(quoted) => quoted.split(['"', '\'']).next().unwrap_or_default(),
                None => value.split(" #").next().unwrap_or_default().trim(),
            };
            (!value.is_empty()).then(|| (i + 1, value.to_owned()))
        })
        .collect()
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
///
/// Only the value's bytes change: a quoted value keeps its quotes (`"Always"` becomes
/// `"IfNotPresent"`), a trailing comment and the line ending stay. A line already saying
/// `IfNotPresent`, quoted or not, is left byte for byte and not counted.
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
        let Some(after_key) = rest.strip_prefix("imagePullPolicy:") else {
            out.push_str(line);
            continue;
        };
        let key_end = body.len() - after_key.len();
        let value = policy_value(after_key);
        if value.unquoted == "IfNotPresent" {
            out.push_str(line);
            continue;
        }
        changed += 1;
        let start = key_end + value.start;
        out.push_str(&body[..key_end]);
        out.push_str(if value.start == 0 {
            " "
        } else {
            &body[key_end..start]
        });
        out.push_str(value.quote);
        out.push_str("IfNotPresent");
        out.push_str(value.quote);
        out.push_str(&body[start + value.len..]);
        out.push_str(ending);
    }
    (out, changed)
}

/// The value of an `imagePullPolicy:` line, after the key.
pub(super) struct PolicyValue<'a> {
    /// Byte offset of the value (its opening quote, if any) after the key; 0 when there is none.
    start: usize,
    /// Its length in bytes, quotes included.
    len: usize,
    /// `"`, `'` or empty.
    quote: &'static str,
    /// The value without quotes.
    pub(super) unquoted: &'a str,
}

pub(super) fn policy_value(after_key: &str) -> PolicyValue<'_> {
    let lead = after_key.len() - after_key.trim_start().len();
    let v = &after_key[lead..];
    for quote in ["\"", "'"] {
        if let Some(inner) = v.strip_prefix(quote)
            && let Some(end) = inner.find(quote)
        {
            return PolicyValue {
                start: lead,
                len: end + 2,
                quote,
                unquoted: &inner[..end],
            };
        }
    }
    // Plain scalar: up to a ` #` comment or the end, trailing blanks excluded.
    let comment = v.find(" #").or_else(|| v.find("\t#")).unwrap_or(v.len());
    let comment = if v.starts_with('#') { 0 } else { comment };
    let plain = v[..comment].trim_end();
    PolicyValue {
        start: if plain.is_empty() { 0 } else { lead },
        len: plain.len(),
        quote: "",
        unquoted: plain,
    }
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
    // A real separator is `---` alone; `- ---` or a quoted scalar is not our defect. A UTF-8 byte
    // order mark before a file's first `---` is not text joined to it either.
    let head_trim = head.trim().trim_start_matches('\u{feff}').trim();
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
                out.push_str(newline(text));
                out.push_str("---");
                // The line's own ending (none on a last line without newline) stays.
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The line ending `text` uses: `\r\n` when its first line ends so, else `\n`.
pub(super) fn newline(text: &str) -> &'static str {
    match text.split_once('\n') {
        Some((first, _)) if first.ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

/// The autoscaler manifest with the extra RBAC appended, in the manifest's own line endings.
pub fn append_autoscaler_extra(text: &str) -> String {
    let nl = newline(text);
    let mut out = String::with_capacity(text.len() + 2 * AUTOSCALER_EXTRA.len() + 2);
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push_str(nl);
    }
    out.push_str(&AUTOSCALER_EXTRA.replace('\n', nl));
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
    fn image_lines_are_numbered_and_unquoted() {
        let text =
            "a: 1\n- image: \"x:1\"\n  image: 'y:2' # c\n  image: z:3 # c\r\nbaseimage: no\n";
        assert_eq!(
            image_lines(text),
            [(2, "x:1".into()), (3, "y:2".into()), (4, "z:3".into())]
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
            "a:\n  imagePullPolicy: IfNotPresent\n  - imagePullPolicy: IfNotPresent # why\nimagePullPolicy: IfNotPresent\r\n"
        );
    }

    #[test]
    fn quoted_pull_policies_keep_their_quotes_and_right_ones_their_bytes() {
        // As in the CSI driver's v3.0.0 manifest: already right, quoted; left alone, not counted.
        let right =
            "  imagePullPolicy: \"IfNotPresent\"\n  imagePullPolicy:   'IfNotPresent'  # ok\n";
        assert_eq!(pull_if_not_present(right), (right.to_owned(), 0));
        let text = "  imagePullPolicy: \"Always\"\r\n  imagePullPolicy: 'Never' # pinned\n  imagePullPolicy:\n";
        let (out, changed) = pull_if_not_present(text);
        assert_eq!(changed, 3);
        assert_eq!(
            out,
            "  imagePullPolicy: \"IfNotPresent\"\r\n  imagePullPolicy: 'IfNotPresent' # pinned\n  imagePullPolicy: IfNotPresent\n"
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
    fn a_leading_byte_order_mark_is_not_a_joined_separator() {
        let text = "\u{feff}---\nkind: A\n---\nkind: B\n";
        assert_eq!(find_joined_separators(text), []);
        assert_eq!(split_joined_separators(text), text);
        // Text before the separator on the first line still is one.
        assert_eq!(find_joined_separators("\u{feff}kind: A---\n").len(), 1);
    }

    #[test]
    fn crlf_manifests_get_crlf_in_the_appended_rbac_and_the_split() {
        let out = append_autoscaler_extra("kind: Deployment\r\nspec: {}");
        assert!(out.starts_with("kind: Deployment\r\nspec: {}\r\n\r\n---\r\napiVersion"));
        assert_eq!(
            out.matches('\n').count(),
            out.matches("\r\n").count(),
            "{out:?}"
        );
        let split = split_joined_separators("kind: A\r\nname: x---\r\nkind: B\r\n");
        assert_eq!(split, "kind: A\r\nname: x\r\n---\r\nkind: B\r\n");
        let lf = append_autoscaler_extra("kind: A\n");
        assert!(!lf.contains('\r'));
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
