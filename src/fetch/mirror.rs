//! URL prefix rewriting for users behind corporate mirrors.
//!
//! `--mirror https://github.com=http://127.0.0.1:8080/github.com` sends every download whose URL
//! starts with `https://github.com` to the mirror instead. The longest matching prefix wins, and a
//! prefix matches only at a path boundary (`https://github.com` does not match
//! `https://github.community`). What is recorded in `versions.txt` stays the original URL.

use std::fmt;
use std::str::FromStr;

/// One `FROM=TO` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The upstream prefix, without a trailing `/`.
    pub from: String,
    /// What replaces it, without a trailing `/`.
    pub to: String,
}

impl FromStr for Mirror {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (from, to) = s.split_once('=').ok_or_else(|| {
            format!("{s:?} is not FROM=TO (e.g. https://github.com=http://mirror:8080/github.com)")
        })?;
        let from = from.trim().trim_end_matches('/');
        let to = to.trim().trim_end_matches('/');
        for (what, url) in [("FROM", from), ("TO", to)] {
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 9 {
                return Err(format!(
                    "{what} in {s:?} must be an http:// or https:// URL"
                ));
            }
        }
        Ok(Self {
            from: from.to_owned(),
            to: to.to_owned(),
        })
    }
}

impl fmt::Display for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.from, self.to)
    }
}

/// A set of mirror rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors(Vec<Mirror>);

impl Mirrors {
    /// The rules, longest prefix first.
    pub fn new(mut rules: Vec<Mirror>) -> Self {
        rules.sort_by(|a, b| b.from.len().cmp(&a.from.len()).then(a.from.cmp(&b.from)));
        Self(rules)
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rules, longest prefix first.
    pub fn rules(&self) -> &[Mirror] {
        &self.0
    }

    /// Where to fetch `url` from.
    pub fn rewrite(&self, url: &str) -> String {
        for m in &self.0 {
            if let Some(rest) = url.strip_prefix(&m.from)
                && (rest.is_empty() || rest.starts_with(['/', '?', '#']))
            {
                return format!("{}{rest}", m.to);
            }
        }
        url.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirrors(rules: &[&str]) -> Mirrors {
        Mirrors::new(rules.iter().map(|r| r.parse().unwrap()).collect())
    }

    #[test]
    fn longest_prefix_wins_at_a_path_boundary() {
        let m = mirrors(&[
            "https://github.com=http://127.0.0.1:8080/github.com",
            "https://github.com/kubernetes/=http://127.0.0.1:9/k8s/",
        ]);
        assert_eq!(
            m.rewrite("https://github.com/containernetworking/plugins/releases/x.tgz"),
            "http://127.0.0.1:8080/github.com/containernetworking/plugins/releases/x.tgz"
        );
        assert_eq!(
            m.rewrite("https://github.com/kubernetes/autoscaler"),
            "http://127.0.0.1:9/k8s/autoscaler"
        );
        assert_eq!(
            m.rewrite("https://github.community/x"),
            "https://github.community/x"
        );
        assert_eq!(
            m.rewrite("https://dl.k8s.io/release"),
            "https://dl.k8s.io/release"
        );
    }

    #[test]
    fn malformed_rules_are_refused_with_an_example() {
        assert!(
            "https://github.com"
                .parse::<Mirror>()
                .unwrap_err()
                .contains("FROM=TO")
        );
        assert!(
            "github.com=http://x"
                .parse::<Mirror>()
                .unwrap_err()
                .contains("FROM")
        );
    }
}

/// `url` with any user name and password replaced by `***`, for messages: credentials in a mirror
/// URL (`http://user:pass@mirror/…`) are sent, never printed.
pub fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("***");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

// Recorded URLs lose their credentials by the domain crate's rule.
pub use cks_iso_domain::recorded::strip_userinfo;

#[cfg(test)]
mod redact_tests {
    use super::{redact, strip_userinfo};

    #[test]
    fn recorded_urls_keep_no_user_or_password() {
        assert_eq!(
            strip_userinfo("http://user:s3cret@host:8080/a/b.yaml?x=1"),
            "http://host:8080/a/b.yaml?x=1"
        );
        assert_eq!(strip_userinfo("https://token@h/x"), "https://h/x");
        assert_eq!(strip_userinfo("https://h/x"), "https://h/x");
        assert_eq!(strip_userinfo("file:x.yaml"), "file:x.yaml");
    }

    #[test]
    fn credentials_in_urls_are_never_shown() {
        assert_eq!(
            redact("http://user:s3cret@mirror:8080/dl.k8s.io/x"),
            "http://***@mirror:8080/dl.k8s.io/x"
        );
        assert_eq!(
            redact("https://token@github.example/x"),
            "https://***@github.example/x"
        );
        assert_eq!(redact("https://dl.k8s.io/x"), "https://dl.k8s.io/x");
        assert_eq!(redact("not a url"), "not a url");
    }
}
