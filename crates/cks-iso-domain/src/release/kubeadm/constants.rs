//! Reading kubeadm's `constants.go` in every form upstream has used for the values cks-iso needs.
//!
//! The file is Go source, not data, and its `SupportedEtcdVersion` map has changed form twice:
//!
//! - **literal keys**, one per Kubernetes minor: `22: "3.5.0-0"`, `"22": …` or `"1.22": …` (every
//!   release before 1.35, and 1.36 on again after kubernetes PR #135589);
//! - **skew keys**, computed from kubeadm's own version at build time:
//!   `uint8(getSkewedKubernetesVersion(-1).Minor()): "3.5.24-0"` and `…(0)…` (kubernetes PR
//!   #134866, shipped in every 1.35 release; PR #135568 added a `-2` entry on master only). Skew
//!   `n` is the release's own minor plus `n`, as kubeadm's `getSkewedKubernetesVersion` computes it;
//! - a value may be a string literal or the name of a string constant (`DefaultEtcdVersion`).
//!
//! kubeadm picks the entry of the target's minor, else the nearest key ([`Constants::etcd_for`]),
//! and `DefaultEtcdVersion` only when the map yields nothing. A construct this reader does not
//! understand is an error that quotes it, so that a third form is reported, not guessed.

/// A constant or map entry this reader could not understand, quoted as the file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A constant the file does not declare (`PauseVersion`, `CoreDNSVersion`, …).
    Missing(&'static str),
    /// A `SupportedEtcdVersion` key in a form not listed in the module docs.
    Key(String),
    /// A `SupportedEtcdVersion` value that is neither a string nor a string constant's name.
    Value(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing(name) => write!(f, "{name} not found"),
            Self::Key(key) => write!(f, "SupportedEtcdVersion key `{key}` is not understood"),
            Self::Value(value) => {
                write!(f, "SupportedEtcdVersion value `{value}` is not understood")
            }
        }
    }
}

/// The parts of one `constants.go` (or of it and `constants_unix.go` together).
pub(super) struct Constants<'a> {
    src: &'a str,
}

impl<'a> Constants<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self { src }
    }

    /// The value of the string constant `name`.
    pub(super) fn string(&self, name: &'static str) -> Result<String, Unreadable> {
        string_const(self.src, name).ok_or(Unreadable::Missing(name))
    }

    /// The etcd tag kubeadm of release minor `minor` lists for that minor: the map's entry for it,
    /// else the nearest key (a tie goes to the lower), else `DefaultEtcdVersion` when the map is
    /// empty (kubeadm's lookup then fails and it falls back to that constant).
    pub(super) fn etcd_for(&self, minor: u64) -> Result<String, Unreadable> {
        let map = self.etcd_map(minor)?;
        match map
            .iter()
            .min_by_key(|(key, _)| (key.abs_diff(minor), *key))
        {
            Some((_, etcd)) => Ok(etcd.clone()),
            None => string_const(self.src, "DefaultEtcdVersion")
                .ok_or(Unreadable::Missing("SupportedEtcdVersion")),
        }
    }

    /// The entries of `SupportedEtcdVersion = map[…]string{ … }` with their keys as Kubernetes
    /// minors, for a file of release minor `minor` (which skew keys are relative to).
    fn etcd_map(&self, minor: u64) -> Result<Vec<(u64, String)>, Unreadable> {
        let code = code_lines(self.src).collect::<Vec<_>>().join("\n");
        let name = "SupportedEtcdVersion";
        // The first `SupportedEtcdVersion = map[...]...{`, not a mere mention of the name.
        let after = code
            .match_indices(name)
            .find_map(|(at, _)| {
                let rest = code[at + name.len()..]
                    .trim_start()
                    .strip_prefix('=')?
                    .trim_start();
                rest.starts_with("map[").then_some(rest)
            })
            .ok_or(Unreadable::Missing(name))?;
        let body = after
            .find('{')
            .map(|at| &after[at + 1..])
            .and_then(|body| body.find('}').map(|end| &body[..end]))
            .ok_or(Unreadable::Missing(name))?;
        let mut out = Vec::new();
        for entry in body
            .split([',', '\n'])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (key, value) = entry
                .split_once(':')
                .ok_or_else(|| Unreadable::Key(entry.to_owned()))?;
            let key = key.trim();
            let minor = literal_minor(key)
                .or_else(|| skewed_minor(key, minor))
                .ok_or_else(|| Unreadable::Key(key.to_owned()))?;
            let value = value.trim();
            let etcd = match quoted(value) {
                Some(literal) => literal.to_owned(),
                None if is_identifier(value) => string_const(self.src, value)
                    .ok_or_else(|| Unreadable::Value(value.to_owned()))?,
                None => return Err(Unreadable::Value(value.to_owned())),
            };
            out.push((minor, etcd));
        }
        Ok(out)
    }
}

/// `22`, `"22"` or `"1.22"` → 22.
fn literal_minor(key: &str) -> Option<u64> {
    let key = key.trim_matches('"');
    key.strip_prefix("1.").unwrap_or(key).parse().ok()
}

/// `uint8(getSkewedKubernetesVersion(N).Minor())` in a file of release minor `minor` → `minor + N`
/// (spaces allowed where Go allows them; `N` may be negative or zero).
fn skewed_minor(key: &str, minor: u64) -> Option<u64> {
    let compact: String = key.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = compact
        .strip_prefix("uint8(getSkewedKubernetesVersion(")?
        .strip_suffix(").Minor())")?;
    let skew: i64 = inner.parse().ok()?;
    minor.checked_add_signed(skew)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The lines of `src` without `//` comments (values never contain `//`).
fn code_lines(src: &str) -> impl Iterator<Item = &str> {
    src.lines()
        .map(|l| l.split("//").next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
}

/// The value of `Name = "value"` (also `Name string = "value"`, with `const`/`var` before it).
pub(super) fn string_const(src: &str, name: &str) -> Option<String> {
    code_lines(src).find_map(|line| {
        let line = line
            .strip_prefix("const ")
            .or_else(|| line.strip_prefix("var "))
            .unwrap_or(line);
        let rest = line.strip_prefix(name)?.trim_start();
        let rest = rest
            .strip_prefix("string")
            .map(str::trim_start)
            .unwrap_or(rest);
        quoted(rest.strip_prefix('=')?.trim_start()).map(str::to_owned)
    })
}

/// The text inside the first pair of double quotes at the start of `s`.
fn quoted(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('"')?;
    inner.split_once('"').map(|(value, _)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn etcd(src: &str, minor: u64) -> Result<String, Unreadable> {
        Constants::new(src).etcd_for(minor)
    }

    #[test]
    fn skew_keys_are_the_files_own_minor_plus_the_skew() {
        // The 1.35 form (kubernetes PR #134866, values of PR #135271), and master's -2 entry
        // (PR #135568).
        let src = "\tSupportedEtcdVersion = map[uint8]string{\n\
                   \t\tuint8(getSkewedKubernetesVersion(-2).Minor()): \"a\",\n\
                   \t\tuint8(getSkewedKubernetesVersion(-1).Minor()): \"3.5.24-0\",\n\
                   \t\tuint8(getSkewedKubernetesVersion(0).Minor()):  \"3.6.6-0\",\n\t}\n";
        assert_eq!(etcd(src, 35).unwrap(), "3.6.6-0");
        let map = Constants::new(src).etcd_map(35).unwrap();
        let keys: Vec<u64> = map.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, [33, 34, 35]);
        assert_eq!(map[1].1, "3.5.24-0");
    }

    #[test]
    fn a_value_naming_a_constant_takes_that_constants_value() {
        let src = "\tDefaultEtcdVersion = \"3.6.6-0\"\n\
                   \tSupportedEtcdVersion = map[uint8]string{\n\
                   \t\tuint8(getSkewedKubernetesVersion( -1 ).Minor()): \"3.5.24-0\",\n\
                   \t\tuint8(getSkewedKubernetesVersion(0).Minor()): DefaultEtcdVersion,\n\t}\n";
        assert_eq!(etcd(src, 35).unwrap(), "3.6.6-0");
        let map = Constants::new(src).etcd_map(35).unwrap();
        assert_eq!(map, [(34, "3.5.24-0".into()), (35, "3.6.6-0".into())]);
    }

    #[test]
    fn an_empty_map_falls_back_to_default_etcd_version_as_kubeadm_does() {
        let src = "DefaultEtcdVersion = \"3.6.6-0\"\nSupportedEtcdVersion = map[uint8]string{}\n";
        assert_eq!(etcd(src, 35).unwrap(), "3.6.6-0");
        let without = "SupportedEtcdVersion = map[uint8]string{}\n";
        assert_eq!(
            etcd(without, 35).unwrap_err(),
            Unreadable::Missing("SupportedEtcdVersion")
        );
    }

    #[test]
    fn an_unknown_construct_is_quoted_not_guessed() {
        let key = "SupportedEtcdVersion = map[uint8]string{\n\
                   uint8(currentVersion().Minor()): \"x\",\n}\n";
        assert_eq!(
            etcd(key, 35).unwrap_err().to_string(),
            "SupportedEtcdVersion key `uint8(currentVersion().Minor())` is not understood"
        );
        let value = "SupportedEtcdVersion = map[uint8]string{\n35: etcdFor(35),\n}\n";
        assert_eq!(
            etcd(value, 35).unwrap_err(),
            Unreadable::Value("etcdFor(35)".into())
        );
        let dangling = "SupportedEtcdVersion = map[uint8]string{\n35: NoSuchConstant,\n}\n";
        assert_eq!(
            etcd(dangling, 35).unwrap_err(),
            Unreadable::Value("NoSuchConstant".into())
        );
    }

    #[test]
    fn a_skew_below_minor_zero_is_not_understood() {
        let src = "SupportedEtcdVersion = map[uint8]string{\n\
                   uint8(getSkewedKubernetesVersion(-9).Minor()): \"x\",\n}\n";
        assert!(matches!(etcd(src, 3), Err(Unreadable::Key(_))));
    }
}
