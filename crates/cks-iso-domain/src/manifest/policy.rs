//! Pull policies as Kubernetes defaults them, found in a manifest's text.
//!
//! A container with no `imagePullPolicy` whose image is untagged or `:latest` is pulled `Always`:
//! an air-gapped node never starts it, whether or not its archive is in `docker/`. Rewriting
//! existing `imagePullPolicy:` lines cannot fix a line that is not there, so such containers get
//! one inserted beside their `image:` line; `verify` reports any that still pull `Always`.
//!
//! The containers are found in the text (block style, by indentation), so an insertion keeps every
//! other byte; the parsed documents are checked too ([`parsed_always`]) so that a container the
//! text scan cannot see (flow style) is never passed over silently.

use serde_json::Value;

use super::edit::policy_value;
use cks_iso_oci::image::Reference;

/// The keys whose items are containers.
const CONTAINER_KEYS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// A container found in a manifest's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// 1-based line of its `image:`.
    pub line: usize,
    /// The image as written, quotes removed.
    pub image: String,
    /// Its `imagePullPolicy` value (quotes removed) and 1-based line, when it has one.
    pub policy: Option<(String, usize)>,
}

impl Container {
    /// The policy Kubernetes runs it with: the one written, else `Always` for an untagged or
    /// `:latest` image, else `IfNotPresent`.
    pub fn effective_policy(&self) -> &str {
        match &self.policy {
            Some((policy, _)) => policy,
            None if always_by_default(&self.image) => "Always",
            None => "IfNotPresent",
        }
    }
}

/// Whether Kubernetes defaults `image` to `Always`: its tag is `latest`, or it has neither tag
/// nor digest (`image@sha256:…` alone defaults to `IfNotPresent`).
pub fn always_by_default(image: &str) -> bool {
    match Reference::parse(image) {
        Ok(r) => r.tag() == Some("latest"),
        // Not a reference cks-iso can parse: judge by its last component as Kubernetes would.
        Err(_) => {
            let last = image.rsplit('/').next().unwrap_or(image);
            !last.contains('@') && last.split_once(':').is_none_or(|(_, tag)| tag == "latest")
        }
    }
}

/// A line's structure: its indentation, whether it starts a sequence item, and its key.
struct Shape<'a> {
    indent: usize,
    dash: bool,
    /// Column of the key (after `- ` on an item line).
    key_col: usize,
    /// The key before `:`, or empty when the line is not `key: …`.
    key: &'a str,
}

fn shape(body: &str) -> Option<Shape<'_>> {
    let trimmed = body.trim_start_matches(' ');
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let indent = body.len() - trimmed.len();
    let (dash, rest) = match trimmed.strip_prefix('-') {
        Some(r) if r.is_empty() || r.starts_with(' ') => (true, r.trim_start_matches(' ')),
        _ => (false, trimmed),
    };
    let key_col = body.len() - rest.len();
    let key = rest
        .split_once(':')
        .filter(|(k, after)| {
            (after.is_empty() || after.starts_with([' ', '\t']))
                && !k.is_empty()
                && !k.contains([' ', '"', '\'', '{', '['])
        })
        .map_or("", |(k, _)| k);
    Some(Shape {
        indent,
        dash,
        key_col,
        key,
    })
}

fn is_document_marker(body: &str) -> bool {
    let b = body.trim_start_matches('\u{feff}');
    b.starts_with("---") || b.starts_with("...")
}

/// Every container of `text` written in block style, in line order.
pub fn containers(text: &str) -> Vec<Container> {
    let bodies: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| l.trim_end_matches(['\n', '\r']))
        .collect();
    let shapes: Vec<Option<Shape>> = bodies.iter().map(|b| shape(b)).collect();
    let lines = Lines {
        bodies: &bodies,
        shapes: &shapes,
    };
    let mut out = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let Some(s) = s.as_ref().filter(|s| s.key == "image") else {
            continue;
        };
        let Some(image) = super::image_lines(bodies[i])
            .into_iter()
            .next()
            .map(|l| l.1)
        else {
            continue;
        };
        if image.starts_with(['|', '>', '&', '*', '!']) {
            continue;
        }
        let mut siblings = vec![i];
        let Some((start, dash_col)) = lines.item_above(i, s, &mut siblings) else {
            continue;
        };
        lines.item_below(i, s.key_col, &mut siblings);
        if !lines.parent_holds_containers(start, dash_col) {
            continue;
        }
        out.push(Container {
            line: i + 1,
            image,
            policy: lines.pull_policy(&siblings),
        });
    }
    out
}

/// A manifest's lines and their shapes, walked from an `image:` line to the sequence item it is in.
struct Lines<'t, 's> {
    bodies: &'t [&'t str],
    shapes: &'s [Option<Shape<'t>>],
}

impl Lines<'_, '_> {
    /// Upwards from the `image:` line at `i` to its item's `- ` line, collecting the keys beside
    /// it into `siblings`; the item's line and dash column, or `None` for a mapping that is no
    /// sequence item (no container).
    fn item_above(&self, i: usize, s: &Shape, siblings: &mut Vec<usize>) -> Option<(usize, usize)> {
        let col = s.key_col;
        let mut item = s.dash.then_some((i, s.indent));
        let mut j = i;
        while item.is_none() && j > 0 {
            j -= 1;
            if is_document_marker(self.bodies[j]) {
                break;
            }
            let Some(t) = &self.shapes[j] else { continue };
            if t.indent > col || (t.indent == col && t.dash) {
                continue;
            }
            if t.indent == col {
                siblings.push(j);
                continue;
            }
            if t.dash && t.key_col == col {
                siblings.push(j);
                item = Some((j, t.indent));
            }
            break;
        }
        item
    }

    /// Downwards from line `i` to the end of its item, collecting the keys at column `col`.
    fn item_below(&self, i: usize, col: usize, siblings: &mut Vec<usize>) {
        for (k, body) in self.bodies.iter().enumerate().skip(i + 1) {
            if is_document_marker(body) {
                break;
            }
            let Some(t) = &self.shapes[k] else { continue };
            if t.indent > col || (t.indent == col && t.dash) {
                continue;
            }
            if t.indent == col {
                siblings.push(k);
                continue;
            }
            break;
        }
    }

    /// Whether the key of the sequence whose item starts at `start` is one whose items are
    /// containers.
    fn parent_holds_containers(&self, start: usize, dash_col: usize) -> bool {
        let parent = (0..start)
            .rev()
            .take_while(|&k| !is_document_marker(self.bodies[k]))
            .filter_map(|k| self.shapes[k].as_ref())
            .find(|t| t.indent < dash_col || (t.indent == dash_col && !t.dash));
        parent.is_some_and(|p| CONTAINER_KEYS.contains(&p.key))
    }

    /// The item's `imagePullPolicy` among `siblings`: its value and 1-based line.
    fn pull_policy(&self, siblings: &[usize]) -> Option<(String, usize)> {
        siblings
            .iter()
            .find(|&&k| {
                self.shapes[k]
                    .as_ref()
                    .is_some_and(|t| t.key == "imagePullPolicy")
            })
            .map(|&k| {
                let body = self.bodies[k];
                let after = &body[body.find("imagePullPolicy:").expect("the key") + 16..];
                (policy_value(after).unquoted.to_owned(), k + 1)
            })
    }
}

/// Inserts `imagePullPolicy: IfNotPresent` after the `image:` line of every container that has
/// no policy and whose image is untagged or `:latest`, with the key's indentation and the image
/// line's ending; returns the text and the 1-based lines (of the input) of those `image:` lines.
pub fn insert_if_not_present(text: &str) -> (String, Vec<usize>) {
    let lines: Vec<usize> = containers(text)
        .into_iter()
        .filter(|c| c.policy.is_none() && always_by_default(&c.image))
        .map(|c| c.line)
        .collect();
    if lines.is_empty() {
        return (text.to_owned(), lines);
    }
    let mut out = String::with_capacity(text.len() + lines.len() * 48);
    for (n, line) in text.split_inclusive('\n').enumerate() {
        out.push_str(line);
        if !lines.contains(&(n + 1)) {
            continue;
        }
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let key_col = shape(body).expect("an image line").key_col;
        let indent: String = body[..key_col]
            .chars()
            .map(|c| if c == '-' { ' ' } else { c })
            .collect();
        if ending.is_empty() {
            out.push_str(super::edit::newline(text));
        }
        out.push_str(&indent);
        out.push_str("imagePullPolicy: IfNotPresent");
        out.push_str(ending);
    }
    (out, lines)
}

/// The images of the parsed documents' containers that have no `imagePullPolicy` and are pulled
/// `Always` by default, sorted: what a text scan must have found.
pub fn parsed_always(docs: &[Value]) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if CONTAINER_KEYS.contains(&key.as_str())
                        && let Value::Array(items) = v
                    {
                        for item in items {
                            if let Some(image) = item.get("image").and_then(Value::as_str)
                                && item.get("imagePullPolicy").is_none()
                                && always_by_default(image.trim())
                            {
                                out.push(image.trim().to_owned());
                            }
                        }
                    }
                    walk(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    docs.iter().for_each(|d| walk(d, &mut out));
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_defaults_latest_and_untagged_to_always_but_not_a_digest() {
        for image in [
            "nginx",
            "nginx:latest",
            "ghcr.io/headlamp-k8s/headlamp:latest",
        ] {
            assert!(always_by_default(image), "{image}");
        }
        let digest = format!("busybox@sha256:{}", "a".repeat(64));
        for image in ["nginx:1.27", "localhost:5000/x:v1", digest.as_str()] {
            assert!(!always_by_default(image), "{image}");
        }
        assert!(always_by_default(&format!(
            "busybox:latest@sha256:{}",
            "a".repeat(64)
        )));
    }

    const PODS: &str = "kind: Deployment\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: init\n        image: busybox\n      containers:\n        - name: a\n          image: \"ghcr.io/x/a:latest\" # newest\n          args:\n            - -v\n          ports:\n          - containerPort: 80\n        - image: quay.io/x/b:latest\n          imagePullPolicy: Always\n        - image: quay.io/x/c:v1\n---\nkind: Operator\nspec:\n  image: nginx\n";

    #[test]
    fn containers_are_found_with_their_policies_and_lines() {
        let found = containers(PODS);
        type Row<'a> = (usize, &'a str, Option<(&'a str, usize)>, &'a str);
        let got: Vec<Row> = found
            .iter()
            .map(|c| {
                (
                    c.line,
                    c.image.as_str(),
                    c.policy.as_ref().map(|(p, l)| (p.as_str(), *l)),
                    c.effective_policy(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (7, "busybox", None, "Always"),
                (10, "ghcr.io/x/a:latest", None, "Always"),
                (15, "quay.io/x/b:latest", Some(("Always", 16)), "Always"),
                (17, "quay.io/x/c:v1", None, "IfNotPresent"),
            ],
            "the operator's image is no container"
        );
    }

    #[test]
    fn a_policy_is_inserted_beside_the_image_with_its_indent_and_ending() {
        let (out, lines) = insert_if_not_present(PODS);
        assert_eq!(lines, [7, 10]);
        let want = PODS
            .replace(
                "        image: busybox\n",
                "        image: busybox\n        imagePullPolicy: IfNotPresent\n",
            )
            .replace(
                "# newest\n",
                "# newest\n          imagePullPolicy: IfNotPresent\n",
            );
        assert_eq!(out, want);
        assert_eq!(insert_if_not_present(&out), (out.clone(), vec![]));
        let docs = crate::manifest::check_yaml("t.yaml", &out).unwrap();
        assert_eq!(parsed_always(&docs), Vec::<String>::new());
        let before = crate::manifest::check_yaml("t.yaml", PODS).unwrap();
        assert_eq!(parsed_always(&before), ["busybox", "ghcr.io/x/a:latest"]);
    }

    #[test]
    fn crlf_dash_lines_and_a_last_line_without_newline_keep_their_shape() {
        let text = "containers:\r\n- image: nginx\r\n  name: n\r\n";
        let (out, _) = insert_if_not_present(text);
        assert_eq!(
            out,
            "containers:\r\n- image: nginx\r\n  imagePullPolicy: IfNotPresent\r\n  name: n\r\n"
        );
        let (out, _) = insert_if_not_present("containers:\n  - image: nginx");
        assert_eq!(
            out,
            "containers:\n  - image: nginx\n    imagePullPolicy: IfNotPresent"
        );
    }

    #[test]
    fn a_policy_above_the_image_counts_and_flow_style_is_left_to_the_parse() {
        let above = "containers:\n- name: a\n  imagePullPolicy: IfNotPresent\n  image: nginx\n";
        assert_eq!(insert_if_not_present(above).1, Vec::<usize>::new());
        let flow = "containers: [{image: nginx}]\n";
        assert_eq!(insert_if_not_present(flow).1, Vec::<usize>::new());
        let docs = crate::manifest::check_yaml("f.yaml", flow).unwrap();
        assert_eq!(parsed_always(&docs), ["nginx"]);
    }
}
