//! Who must have signed which images: the built-in rule for registry.k8s.io, and rules a
//! `--signature-policy` file adds (a company's own images, an add-on's). Rules match the image's
//! `registry/repository` (its name, not the mirror serving it); the first match wins, the file's
//! rules before the built-in one. An image no rule matches is not covered.
//!
//! ```yaml
//! rules:
//!   - match: "quay.io/acme/**"          # `*` within one path segment, `**` across segments
//!     identity: "release@acme.example"  # exactly this SAN (e-mail or URI), or:
//!   # identity-regex: "^https://github.com/acme/.+$"   (the whole SAN must match)
//!     issuer: "https://accounts.google.com"   # or issuer-regex:, the whole issuer matching
//!   - prefix: "ghcr.io/acme"            # this repository and every one below it
//!     certificate-identity-regexp: "^https://github.com/acme/.+$"
//!     certificate-oidc-issuer: "https://token.actions.githubusercontent.com"
//! ```
//!
//! A `prefix` is an image name as users write it, normalised as containerd does (`acme/tool` is
//! `docker.io/acme/tool`), or a registry host alone; it covers whole path segments only
//! (`ghcr.io/acme` covers `ghcr.io/acme/tool`, never `ghcr.io/acme-evil/tool`). The signer keys
//! also take the names of cosign's flags (`certificate-identity`, `certificate-identity-regexp`,
//! `certificate-oidc-issuer`, `certificate-oidc-issuer-regexp`), so that a rule reads like the
//! `cosign verify` line a publisher documents; a regexp must match the whole SAN or issuer, where
//! cosign's may match a part of it.

use crate::Invalid;
use serde::Deserialize;

/// Kubernetes' image signer: the promoter's service account, through Google's OIDC.
pub const K8S_IMAGE_IDENTITY: &str = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
/// Kubernetes' binary signer (dl.k8s.io's `.sig`/`.cert`): the release staging account.
pub const K8S_BINARY_IDENTITY: &str = "krel-staging@k8s-releng-prod.iam.gserviceaccount.com";
/// Google's OIDC issuer.
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";

/// The first Kubernetes minor (1.x) whose release artifacts upstream always signs: KEP-3031
/// ("Signing release artifacts", kubernetes/enhancements `keps/sig-release/3031-signing-release-
/// artifacts`) went beta in 1.26 with "standard Kubernetes release artifacts (binaries and
/// container images) are signed"; kubernetes.io's "Verify Signed Kubernetes Artifacts" (beta
/// since v1.26) verifies every control-plane image of a release with `cosign verify` and the
/// krel-trust identity. A dl.k8s.io binary or a control-plane image of such a release without a
/// signature is therefore withheld, not unsigned.
pub const ALWAYS_SIGNED_SINCE_MINOR: u64 = 26;

/// The registry.k8s.io images a Kubernetes release builds and promotes under its own tag
/// (`v1.33.1`) — kubeadm's control-plane images, those the release's SBOM lists as
/// `registry.k8s.io` packages and the signed-artifacts page verifies. pause, etcd and CoreDNS are
/// promoted on their own schedule, and some tags predate signing: they stay a warning.
pub const CONTROL_PLANE_IMAGES: [&str; 4] = [
    "registry.k8s.io/kube-apiserver",
    "registry.k8s.io/kube-controller-manager",
    "registry.k8s.io/kube-scheduler",
    "registry.k8s.io/kube-proxy",
];

/// Whether upstream signs every copy of the image `repository`:`tag` (see
/// [`ALWAYS_SIGNED_SINCE_MINOR`] and [`CONTROL_PLANE_IMAGES`]): a control-plane image whose tag
/// is a Kubernetes release `v1.N.P[-pre]` with N at least 26.
pub fn always_signed(repository: &str, tag: Option<&str>) -> bool {
    if !CONTROL_PLANE_IMAGES.contains(&repository) {
        return false;
    }
    let Some(version) = tag.and_then(|t| t.strip_prefix("v1.")) else {
        return false;
    };
    let minor = version.split('.').next().unwrap_or_default();
    minor.bytes().all(|b| b.is_ascii_digit())
        && minor
            .parse::<u64>()
            .is_ok_and(|m| m >= ALWAYS_SIGNED_SINCE_MINOR)
}

/// The identity a rule requires.
#[derive(Debug, Clone)]
pub enum Identity {
    /// Exactly this SAN.
    Exact(String),
    /// A SAN the whole of which matches.
    Regex(regex::Regex),
}

impl Identity {
    /// Whether `san` is acceptable.
    pub fn matches(&self, san: &str) -> bool {
        match self {
            Self::Exact(want) => want == san,
            Self::Regex(re) => whole_match(re, san),
        }
    }

    /// For errors: what is wanted.
    pub fn describe(&self) -> String {
        match self {
            Self::Exact(want) => want.clone(),
            Self::Regex(re) => format!("an identity matching /{}/", re.as_str()),
        }
    }
}

/// The OIDC issuer a rule requires.
#[derive(Debug, Clone)]
pub enum Issuer {
    /// Exactly this issuer URL.
    Exact(String),
    /// An issuer URL the whole of which matches (`--certificate-oidc-issuer-regexp`).
    Regex(regex::Regex),
}

impl Issuer {
    /// Whether the certificate's `issuer` is acceptable.
    pub fn matches(&self, issuer: &str) -> bool {
        match self {
            Self::Exact(want) => want == issuer,
            Self::Regex(re) => whole_match(re, issuer),
        }
    }

    /// For errors: what is wanted.
    pub fn describe(&self) -> String {
        match self {
            Self::Exact(want) => want.clone(),
            Self::Regex(re) => format!("an issuer matching /{}/", re.as_str()),
        }
    }

    /// An exact issuer, or one matching the regexp `re` (the flags' and the files' two forms);
    /// the regexp's error when it does not compile.
    pub fn new(exact: Option<&str>, re: Option<&str>) -> Option<Result<Self, regex::Error>> {
        match (exact, re) {
            (Some(exact), _) => Some(Ok(Self::Exact(exact.to_owned()))),
            (None, Some(re)) => Some(regex::Regex::new(re).map(Self::Regex)),
            (None, None) => None,
        }
    }
}

/// Whether `re` matches the whole of `text`, not a part of it: `re` anchored at both ends (a
/// leftmost match alone would take `a` of `a|ab` and refuse `ab`). Compiled per call: a policy
/// is judged a few dozen times per run.
fn whole_match(re: &regex::Regex, text: &str) -> bool {
    regex::Regex::new(&format!(r"\A(?:{})\z", re.as_str())).is_ok_and(|a| a.is_match(text))
}

/// Who must have signed the images whose name matches.
#[derive(Debug, Clone)]
pub struct Rule {
    /// A glob on `registry/repository` (`registry.k8s.io/**`).
    pub pattern: String,
    /// The SAN (e-mail or URI) of the signing certificate.
    pub identity: Identity,
    /// The OIDC issuer the certificate records.
    pub issuer: Issuer,
}

impl Rule {
    /// A rule with an exact identity.
    pub fn exact(pattern: &str, identity: &str, issuer: &str) -> Self {
        Self {
            pattern: pattern.into(),
            identity: Identity::Exact(identity.into()),
            issuer: Issuer::Exact(issuer.into()),
        }
    }

    /// Whether it covers `repository` (`registry.k8s.io/pause`).
    pub fn covers(&self, repository: &str) -> bool {
        glob(self.pattern.as_bytes(), repository.as_bytes())
    }
}

/// `*` matches within a path segment, `**` across them; everything else literally.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        [b'*', rest @ ..] => (0..=text.len())
            .take_while(|&i| i == 0 || text[i - 1] != b'/')
            .any(|i| glob(rest, &text[i..])),
        [c, rest @ ..] => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// The rules, in the order they are tried.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    rules: Vec<FileRule>,
}

/// A signer policy for ISOs: public keys, and rules matched against the ISO's file name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IsoFile {
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    rules: Vec<FileRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileRule {
    #[serde(rename = "match")]
    pattern: Option<String>,
    prefix: Option<String>,
    #[serde(alias = "certificate-identity")]
    identity: Option<String>,
    #[serde(alias = "identity-regexp", alias = "certificate-identity-regexp")]
    identity_regex: Option<String>,
    #[serde(alias = "certificate-oidc-issuer")]
    issuer: Option<String>,
    #[serde(alias = "issuer-regexp", alias = "certificate-oidc-issuer-regexp")]
    issuer_regex: Option<String>,
}

/// The globs a rule's `prefix` stands for: the repository itself and every one below it (`*` is
/// not a character of a name, so the prefix is matched literally); a registry host alone covers
/// only what is below it. An error saying why when it is neither.
fn prefix_globs(prefix: &str) -> Result<Vec<String>, Invalid> {
    let bare = prefix.trim_end_matches('/');
    let host_only = !bare.contains('/')
        && (bare.contains(['.', ':']) || bare == "localhost")
        && !bare.is_empty();
    if host_only {
        return Ok(vec![format!("{bare}/**")]);
    }
    let parsed =
        cks_iso_oci::image::Reference::parse(bare).map_err(|e| Invalid::from(e.to_string()))?;
    let last = bare.rsplit('/').next().unwrap_or_default();
    if bare.contains('@') || last.contains(':') {
        return Err(format!(
            "{prefix:?} names a tag or digest; a prefix is a repository or a registry host"
        )
        .into());
    }
    let repository = parsed.repository();
    Ok(vec![repository.clone(), format!("{repository}/**")])
}

impl Policy {
    /// The built-in rules: registry.k8s.io images are signed by krel-trust, dl.k8s.io files
    /// (matched by URL without the scheme) by krel-staging.
    pub fn builtin() -> Self {
        Self {
            rules: vec![
                Rule::exact("registry.k8s.io/**", K8S_IMAGE_IDENTITY, GOOGLE_ISSUER),
                Rule::exact("dl.k8s.io/**", K8S_BINARY_IDENTITY, GOOGLE_ISSUER),
            ],
        }
    }

    /// The built-in rule after the rules of a policy file's YAML `text`.
    pub fn with_file(text: &str) -> Result<Self, Invalid> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| {
            let text = e.to_string();
            text.lines().next().unwrap_or_default().to_owned()
        })?;
        let mut rules = rules_of(file.rules)?;
        rules.extend(Self::builtin().rules);
        Ok(Self { rules })
    }

    /// A signer policy for the ISOs cks-iso writes (`register --signer-policy`): the rules of
    /// the same language, matched against the ISO's file name (`match: "setup-v1.33.*"`), and
    /// `keys:`, public key files (as written, relative to the file) any of which may have signed
    /// any ISO. No built-in rule: an operator's ISOs are signed by whom the operator says.
    pub fn for_isos(text: &str) -> Result<(Vec<String>, Self), Invalid> {
        let file: IsoFile = serde_saphyr::from_str(text).map_err(|e| {
            let text = e.to_string();
            text.lines().next().unwrap_or_default().to_owned()
        })?;
        if file.keys.is_empty() && file.rules.is_empty() {
            return Err("neither keys nor rules: the policy would accept no signer".into());
        }
        let rules = rules_of(file.rules)?;
        Ok((file.keys, Self { rules }))
    }

    /// A policy of one rule covering everything (the signer flags of `verify` and `register`).
    pub fn one(identity: Identity, issuer: Issuer) -> Self {
        Self {
            rules: vec![Rule {
                pattern: "**".into(),
                identity,
                issuer,
            }],
        }
    }

    /// Its rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

/// The rules of a policy file, checked.
fn rules_of(file_rules: Vec<FileRule>) -> Result<Vec<Rule>, Invalid> {
    let mut rules = Vec::new();
    for (i, r) in file_rules.into_iter().enumerate() {
        let n = i + 1;
        let patterns = match (r.pattern, r.prefix) {
            (Some(pattern), None) => vec![pattern],
            (None, Some(prefix)) => {
                prefix_globs(&prefix).map_err(|e| format!("rule {n}: prefix: {e}"))?
            }
            _ => return Err(format!("rule {n}: give exactly one of match, prefix").into()),
        };
        let identity = match (r.identity, r.identity_regex) {
            (Some(exact), None) => Identity::Exact(exact),
            (None, Some(re)) => Identity::Regex(
                regex::Regex::new(&re).map_err(|e| format!("rule {n}: identity-regex: {e}"))?,
            ),
            _ => {
                return Err(
                    format!("rule {n}: give exactly one of identity, identity-regex").into(),
                );
            }
        };
        let issuer = match (r.issuer, r.issuer_regex) {
            (Some(exact), None) if !exact.is_empty() => Issuer::Exact(exact),
            (None, Some(re)) => Issuer::Regex(
                regex::Regex::new(&re).map_err(|e| format!("rule {n}: issuer-regex: {e}"))?,
            ),
            _ => {
                return Err(format!(
                    "rule {n}: give exactly one of issuer, issuer-regex (not empty)"
                )
                .into());
            }
        };
        if patterns.iter().any(String::is_empty) {
            return Err(format!("rule {n}: match must not be empty").into());
        }
        rules.extend(patterns.into_iter().map(|pattern| Rule {
            pattern,
            identity: identity.clone(),
            issuer: issuer.clone(),
        }));
    }
    Ok(rules)
}

impl Policy {
    /// The first rule covering a downloaded file's `url` (matched without its scheme:
    /// `dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm`), if any.
    pub fn rule_for_url(&self, url: &str) -> Option<&Rule> {
        let bare = url.split_once("://").map_or(url, |(_, rest)| rest);
        self.rule_for(bare)
    }

    /// The first rule covering `repository` (`registry.k8s.io/pause`), if any.
    pub fn rule_for(&self, repository: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.covers(repository))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_plane_images_of_1_26_on_are_always_signed_and_nothing_else() {
        for (repository, tag, signed) in [
            ("registry.k8s.io/kube-apiserver", Some("v1.33.1"), true),
            ("registry.k8s.io/kube-proxy", Some("v1.26.0"), true),
            ("registry.k8s.io/kube-scheduler", Some("v1.36.0-rc.1"), true),
            (
                "registry.k8s.io/kube-controller-manager",
                Some("v1.25.16"),
                false,
            ),
            ("registry.k8s.io/kube-apiserver", Some("v2.0.0"), false),
            ("registry.k8s.io/kube-apiserver", Some("latest"), false),
            ("registry.k8s.io/kube-apiserver", None, false),
            ("registry.k8s.io/pause", Some("3.10"), false),
            ("registry.k8s.io/etcd", Some("3.5.21-0"), false),
            ("registry.k8s.io/coredns/coredns", Some("v1.12.0"), false),
            (
                "registry.k8s.io.evil/kube-apiserver",
                Some("v1.33.1"),
                false,
            ),
        ] {
            assert_eq!(
                always_signed(repository, tag),
                signed,
                "{repository}:{tag:?}"
            );
        }
    }

    #[test]
    fn globs() {
        assert!(glob(
            b"registry.k8s.io/**",
            b"registry.k8s.io/coredns/coredns"
        ));
        assert!(!glob(b"registry.k8s.io/**", b"registry.k8s.io.evil/pause"));
        assert!(glob(b"quay.io/*/node", b"quay.io/calico/node"));
        assert!(!glob(b"quay.io/*", b"quay.io/calico/node"));
        assert!(glob(b"quay.io/calico/*", b"quay.io/calico/node"));
    }

    #[test]
    fn the_file_comes_first_and_the_builtin_stays() {
        let policy = Policy::with_file(
            "rules:\n  - match: \"docker.io/calico/**\"\n    identity-regex: \"^https://github.com/projectcalico/.+$\"\n    issuer: https://token.actions.githubusercontent.com\n",
        )
        .unwrap();
        let calico = policy.rule_for("docker.io/calico/node").unwrap();
        assert!(
            calico
                .identity
                .matches("https://github.com/projectcalico/calico/x")
        );
        assert!(
            !calico
                .identity
                .matches("evil https://github.com/projectcalico/x")
        );
        let k8s = policy.rule_for("registry.k8s.io/pause").unwrap();
        assert!(k8s.identity.matches(K8S_IMAGE_IDENTITY));
        assert!(policy.rule_for("docker.io/library/nginx").is_none());
        let bin = policy
            .rule_for_url("https://dl.k8s.io/release/v1.33.1/bin/linux/amd64/kubeadm")
            .unwrap();
        assert!(bin.identity.matches(K8S_BINARY_IDENTITY));
        assert!(
            policy
                .rule_for_url("https://github.com/containernetworking/plugins/x.tgz")
                .is_none()
        );
        assert!(Policy::with_file("rules:\n  - match: a\n    issuer: b\n").is_err());
        assert!(
            Policy::with_file(
                "rules:\n  - match: a\n    identity: x\n    issuer: b\n    extra: 1\n"
            )
            .is_err()
        );
    }

    #[test]
    fn an_issuer_regexp_matches_whole_issuers_and_a_rule_takes_one_issuer_form() {
        let policy = Policy::with_file(
            "rules:\n  - match: \"ghcr.io/**\"\n    identity-regex: \"^https://github.com/acme/.+$\"\n    certificate-oidc-issuer-regexp: \"https://token[.]actions[.]githubusercontent[.]com|https://gitlab[.]example\"\n",
        )
        .unwrap();
        let rule = policy.rule_for("ghcr.io/acme/tool").unwrap();
        for (issuer, ok) in [
            ("https://token.actions.githubusercontent.com", true),
            ("https://gitlab.example", true),
            ("https://gitlab.example.evil", false),
            ("evil https://gitlab.example", false),
            ("https://accounts.google.com", false),
        ] {
            assert_eq!(rule.issuer.matches(issuer), ok, "{issuer}");
        }
        assert!(rule.issuer.describe().starts_with("an issuer matching /"));
        // The leftmost match of an alternation is not the whole: `a|ab` still accepts `ab`.
        let alternation = Issuer::new(None, Some("a|ab")).unwrap().unwrap();
        assert!(alternation.matches("ab"));
        for both_or_none in [
            "rules:\n  - match: a\n    identity: x\n    issuer: b\n    issuer-regexp: c\n",
            "rules:\n  - match: a\n    identity: x\n",
            "rules:\n  - match: a\n    identity: x\n    issuer: \"\"\n",
            "rules:\n  - match: a\n    identity: x\n    issuer-regex: \"(\"\n",
        ] {
            assert!(Policy::with_file(both_or_none).is_err(), "{both_or_none}");
        }
    }

    #[test]
    fn a_prefix_covers_whole_segments_of_the_normalised_name_with_cosign_s_key_names() {
        let policy = Policy::with_file(
            "rules:\n  - prefix: ghcr.io/acme/\n    certificate-identity-regexp: \"^https://github.com/acme/.+$\"\n    certificate-oidc-issuer: https://token.actions.githubusercontent.com\n  - prefix: bitnami/redis\n    certificate-identity: release@bitnami.example\n    issuer: https://accounts.google.com\n  - prefix: registry.acme.example:5000\n    identity-regexp: \"^ops@acme[.]example$\"\n    issuer: https://accounts.google.com\n",
        )
        .unwrap();
        for (repository, identity) in [
            ("ghcr.io/acme", "https://github.com/acme/x"),
            ("ghcr.io/acme/tool", "https://github.com/acme/x"),
            ("ghcr.io/acme/deep/tool", "https://github.com/acme/x"),
            ("docker.io/bitnami/redis", "release@bitnami.example"),
            ("docker.io/bitnami/redis/sub", "release@bitnami.example"),
            ("registry.acme.example:5000/a/b", "ops@acme.example"),
        ] {
            let rule = policy.rule_for(repository).expect(repository);
            assert!(rule.identity.matches(identity), "{repository}");
        }
        let github = policy.rule_for("ghcr.io/acme/tool").unwrap();
        assert!(
            github
                .issuer
                .matches("https://token.actions.githubusercontent.com")
        );
        assert!(
            !github
                .issuer
                .matches("https://token.actions.githubusercontent.com.evil")
        );
        assert!(!github.identity.matches("evil https://github.com/acme/x"));
        for uncovered in [
            "ghcr.io/acme-evil/tool",
            "ghcr.io/acm",
            "docker.io/bitnami/redis-cluster",
            "docker.io/library/redis",
            "registry.acme.example:5000",
            "registry.acme.example/a",
        ] {
            assert!(policy.rule_for(uncovered).is_none(), "{uncovered}");
        }
        // The built-in rules stay, after the file's.
        assert!(policy.rule_for("registry.k8s.io/pause").is_some());
    }

    #[test]
    fn a_rule_needs_one_scope_and_a_prefix_is_a_name_without_tag_or_digest() {
        for (text, wanted) in [
            (
                "rules:\n  - match: a/**\n    prefix: a\n    identity: x\n    issuer: b\n",
                "rule 1: give exactly one of match, prefix",
            ),
            (
                "rules:\n  - identity: x\n    issuer: b\n",
                "rule 1: give exactly one of match, prefix",
            ),
            (
                "rules:\n  - prefix: ghcr.io/acme/tool:v1\n    identity: x\n    issuer: b\n",
                "rule 1: prefix: \"ghcr.io/acme/tool:v1\" names a tag or digest",
            ),
            (
                "rules:\n  - prefix: \"ghcr.io/Acme\"\n    identity: x\n    issuer: b\n",
                "rule 1: prefix: ",
            ),
        ] {
            let err = Policy::with_file(text).unwrap_err().to_string();
            assert!(err.starts_with(wanted), "{text}: {err}");
        }
        let twice =
            "rules:\n  - prefix: a\n    identity: x\n    certificate-identity: y\n    issuer: b\n";
        assert!(Policy::with_file(twice).is_err());
    }
}
