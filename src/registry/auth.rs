//! How a registry wants us to authenticate: the `WWW-Authenticate` challenge it answers `/v2/`
//! with. Who we are (the user's credentials) is `credentials`'s.

use std::collections::BTreeMap;

/// How a registry wants to be authenticated, from its answer to `GET /v2/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// It answered 200: no authentication.
    None,
    /// `Basic`: send the credentials with every request.
    Basic,
    /// `Bearer realm=…,service=…`: get a token per repository from `realm`.
    Bearer {
        /// The token service URL.
        realm: String,
        /// The `service` parameter, if given.
        service: Option<String>,
    },
}

impl Challenge {
    /// Parses a `WWW-Authenticate` value; `None` when it is neither Basic nor a usable Bearer.
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim();
        let (scheme, params) = header.split_once(' ').unwrap_or((header, ""));
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Some(Self::Basic),
            "bearer" => {
                let params = params_of(params);
                Some(Self::Bearer {
                    realm: params.get("realm")?.clone(),
                    service: params.get("service").cloned(),
                })
            }
            _ => None,
        }
    }
}

/// `key="value", key=value` pairs; quoted values may hold commas and `\"`.
fn params_of(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        out.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenge_gives_realm_and_service() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/a:pull,push""#,
        );
        assert_eq!(
            c,
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
            })
        );
        assert_eq!(
            Challenge::parse(r#"Basic realm="x""#),
            Some(Challenge::Basic)
        );
        assert_eq!(Challenge::parse("Bearer service=x"), None);
    }
}
