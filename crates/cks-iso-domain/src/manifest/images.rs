//! Reading a manifest as YAML: is it one, and which images does it need?

use serde_json::Value;

use super::ManifestError;

/// Parses every document of `text`, refusing HTML pages and non-object documents.
pub fn check_yaml(name: &str, text: &str) -> Result<Vec<Value>, ManifestError> {
    let head = text
        .trim_start()
        .get(..64)
        .unwrap_or(text.trim_start())
        .to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.starts_with("<html") || head.starts_with("<?xml")
    {
        return Err(ManifestError::Html {
            name: name.to_owned(),
        });
    }
    let docs: Vec<Value> =
        serde_saphyr::from_str_multiple(text).map_err(|source| ManifestError::Yaml {
            name: name.to_owned(),
            source: Box::new(source),
        })?;
    for (i, doc) in docs.iter().enumerate() {
        if !(doc.is_object() || doc.is_null()) {
            return Err(ManifestError::NotObject {
                name: name.to_owned(),
                index: i + 1,
            });
        }
    }
    Ok(docs)
}

/// Checks that `docs` (as [`check_yaml`] returned them) are what `kubectl apply -f` takes: at
/// least one object, and every document empty or a mapping with non-empty `apiVersion` and `kind`
/// strings. The rule for add-on manifests, which cks-iso knows nothing else of.
pub fn check_kubernetes(name: &str, docs: &[Value]) -> Result<(), ManifestError> {
    let refused = |index, problem: &str| ManifestError::NotKubernetes {
        name: name.to_owned(),
        index,
        problem: problem.to_owned(),
    };
    for (i, doc) in docs.iter().enumerate() {
        let Some(object) = doc.as_object() else {
            continue;
        };
        for field in ["apiVersion", "kind"] {
            match object.get(field) {
                Some(Value::String(s)) if !s.trim().is_empty() => {}
                Some(_) => return Err(refused(Some(i + 1), &format!("its {field} is not a name"))),
                None => return Err(refused(Some(i + 1), &format!("it has no {field}"))),
            }
        }
    }
    match docs.iter().any(Value::is_object) {
        true => Ok(()),
        false => Err(refused(None, "it holds only empty documents")),
    }
}

/// Every container image the documents reference, sorted and without duplicates:
/// the `image` of containers, initContainers and ephemeralContainers, and any other string value
/// under an `image` key (CRDs of operators name images in their own places).
pub fn images(docs: &[Value]) -> Vec<String> {
    let mut found = Vec::new();
    for doc in docs {
        walk(doc, &mut found);
    }
    found.sort();
    found.dedup();
    found
}

fn walk(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "image"
                    && let Value::String(image) = v
                    && !image.trim().is_empty()
                {
                    found.push(image.trim().to_owned());
                } else {
                    walk(v, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_images_in_every_container_kind_and_elsewhere() {
        let text = "kind: Pod\nspec:\n  initContainers:\n  - image: busybox:1\n  containers:\n  - name: a\n    image: \"quay.io/x/y:v1@sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n  - image: busybox:1\n  ephemeralContainers:\n  - image: debug:2\n---\nkind: Operator\nspec:\n  sidecar:\n    image: ghcr.io/o/s:3\n  imageTag: notanimage\n";
        let docs = check_yaml("t.yaml", text).unwrap();
        assert_eq!(
            images(&docs),
            [
                "busybox:1",
                "debug:2",
                "ghcr.io/o/s:3",
                "quay.io/x/y:v1@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            ]
        );
    }

    #[test]
    fn html_error_pages_and_bare_strings_are_refused() {
        let err = check_yaml("dashboard.yaml", "<!DOCTYPE html><html>404</html>").unwrap_err();
        assert!(matches!(err, ManifestError::Html { .. }), "{err}");
        let err = check_yaml("dashboard.yaml", "Not Found\n").unwrap_err();
        assert!(matches!(err, ManifestError::NotObject { .. }), "{err}");
    }

    #[test]
    fn a_joined_separator_is_a_yaml_error_until_split() {
        let text = "kind: A\nmetadata:\n  name: x---\nkind: B\nmetadata:\n  name: y\n";
        assert!(check_yaml("m.yaml", text).is_err());
    }

    #[test]
    fn add_on_manifests_must_be_kubernetes_objects() {
        let ok =
            "apiVersion: v1\nkind: Namespace\n---\n---\napiVersion: apps/v1\nkind: Deployment\n";
        check_kubernetes("a.yaml", &check_yaml("a.yaml", ok).unwrap()).unwrap();
        for (text, said) in [
            (
                "name: my app\nreplicas: 3\n",
                "a.yaml: document 1 is not a Kubernetes object: it has no apiVersion",
            ),
            (
                "apiVersion: v1\nkind: A\n---\napiVersion: v1\n",
                "a.yaml: document 2 is not a Kubernetes object: it has no kind",
            ),
            (
                "apiVersion: v1\nkind: [a]\n",
                "a.yaml: document 1 is not a Kubernetes object: its kind is not a name",
            ),
            (
                "apiVersion: \"\"\nkind: A\n",
                "its apiVersion is not a name",
            ),
            (
                "---\n# nothing\n---\n",
                "a.yaml: it is not a Kubernetes object: it holds only empty documents",
            ),
        ] {
            let docs = check_yaml("a.yaml", text).unwrap();
            let err = check_kubernetes("a.yaml", &docs).unwrap_err();
            assert!(err.to_string().contains(said), "{text:?}: {err}");
            assert!(err.hint().unwrap().contains("kubectl apply -f"));
        }
    }
}
