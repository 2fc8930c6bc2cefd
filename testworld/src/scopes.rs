//! The access a token must grant for a request, as distribution's token authorization asks it
//! (distribution `registry/handlers/app.go`: `App.authorized` and `appendAccessRecords`; the
//! challenge as `registry/auth/token/accesscontroller.go` words it), for the world's token front
//! when it checks scopes ([`crate::registry::TokenFront::require_scopes`]): `GET`/`HEAD` on a
//! repository need `pull`, `POST`/`PUT`/`PATCH` need `pull` and `push`, `DELETE` needs `delete`,
//! and a blob mount (`?from=<repository>`) needs `pull` on the repository it mounts from too.

/// `(repository, action)` pairs `method target` needs; empty for the API root.
pub fn required(method: &str, target: &str) -> Vec<(String, &'static str)> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let Some(name) = repository(path) else {
        return Vec::new();
    };
    let mut needed: Vec<(String, &'static str)> = match method {
        "GET" | "HEAD" => vec![(name, "pull")],
        "POST" | "PUT" | "PATCH" => vec![(name.clone(), "pull"), (name, "push")],
        "DELETE" => vec![(name, "delete")],
        _ => Vec::new(),
    };
    let from = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("from="))
        .map(|f| f.replace("%2F", "/").replace("%2f", "/"));
    if let Some(from) = from.filter(|f| !f.is_empty()) {
        needed.push((from, "pull"));
    }
    needed
}

/// The repository of `/v2/<name>/(manifests|blobs|tags|referrers)/…`: the components before the
/// last of those words, as distribution's router reads a name.
fn repository(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v2/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let at = parts
        .iter()
        .rposition(|p| matches!(*p, "manifests" | "blobs" | "tags" | "referrers"))?;
    (at > 0).then(|| parts[..at].join("/"))
}

/// Whether `granted` (`repository:<name>:<action>[,<action>…]` each) covers every pair of `needed`.
pub fn covered(granted: &[String], needed: &[(String, &str)]) -> bool {
    needed.iter().all(|(name, action)| {
        granted.iter().any(|scope| {
            let Some(rest) = scope.strip_prefix("repository:") else {
                return false;
            };
            rest.rsplit_once(':')
                .is_some_and(|(n, actions)| n == name && actions.split(',').any(|a| a == *action))
        })
    })
}

/// The `scope` value a challenge names for `needed`: one `repository:<name>:<actions>` per
/// repository, space-separated, in the order first needed.
pub fn challenge_scope(needed: &[(String, &str)]) -> String {
    let mut scopes: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, action) in needed {
        match scopes.iter_mut().find(|(n, _)| n == name) {
            Some((_, actions)) if !actions.contains(action) => actions.push(action),
            Some(_) => {}
            None => scopes.push((name.clone(), vec![action])),
        }
    }
    let words: Vec<String> = (scopes.iter())
        .map(|(name, actions)| format!("repository:{name}:{}", actions.join(",")))
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_needs_pull_on_the_repository_it_mounts_from() {
        let needed = required(
            "POST",
            "/v2/mirror/b/blobs/uploads/?mount=sha256:ab&from=mirror%2Fa",
        );
        assert_eq!(
            needed,
            [
                ("mirror/b".to_owned(), "pull"),
                ("mirror/b".to_owned(), "push"),
                ("mirror/a".to_owned(), "pull")
            ]
        );
        let b_only = ["repository:mirror/b:pull,push".to_owned()];
        assert!(!covered(&b_only, &needed));
        let both = [b_only[0].clone(), "repository:mirror/a:pull".to_owned()];
        assert!(covered(&both, &needed));
        assert_eq!(
            challenge_scope(&needed),
            "repository:mirror/b:pull,push repository:mirror/a:pull"
        );
        assert_eq!(required("GET", "/v2/"), []);
        assert_eq!(
            required("HEAD", "/v2/x/blobs/sha256:ab"),
            [("x".to_owned(), "pull")]
        );
    }
}
