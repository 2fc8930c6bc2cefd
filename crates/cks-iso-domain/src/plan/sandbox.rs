//! Which image a CKS node runs as every pod's sandbox, worked out as the node does.
//!
//! CloudStack's node script (`setup-kube-system`, in
//! `plugins/integrations/kubernetes-service/src/main/resources/script/` of apache/cloudstack)
//! imports every `docker/` archive of the ISO, then sets containerd's `sandbox_image` to the output
//! of `ctr -n k8s.io images ls -q | grep "pause" | sort | tail -n 1`. That is a substring match on
//! each name as containerd lists it (fully qualified, `name:tag`, `name@digest` or both, exactly as
//! the archive's `io.containerd.image.name` or `RepoTags` give it), then the last in `sort`'s
//! order. So any image whose listed name contains `pause` — `quay.io/evil/pause-sandbox:1`,
//! `docker.io/rancher/mirrored-pause:3.6`, a tag `:pause` — is a candidate, and the one that
//! sorts last wins.
//!
//! `sort` orders by the locale it runs in. CloudStack's node template (the system VM template,
//! `tools/appliance/systemvmtemplate/scripts/configure_locale.sh`) writes `LANG=en_US.UTF-8` and
//! `LC_ALL=en_US.UTF-8` into `/etc/default/locale`, so that is the likely order; a node built from
//! another image may run in `C` (or `C.UTF-8`, the same order for ASCII). Both are computed here
//! ([`Collation`]) and a report names both picks when they differ. glibc's `en_US.UTF-8` order is
//! modelled for the ASCII that image names are made of ([`collate`]): exact wherever two names
//! differ in their letters and digits (checked against glibc 2.36's `sort` on 3,000 random
//! names, every one of their 4.5 million pairs), approximate where they differ only in
//! punctuation or case (glibc breaks some of those ties differently after a digit). The pick is
//! what messages report; the rule itself refuses every second pause image whatever the order.

use std::cmp::Ordering;
use std::fmt;

/// The node's selection command, as the messages quote it.
pub const NODE_RULE: &str = "ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1";

/// Whether `grep pause` selects `listed` (a name as `ctr images ls -q` prints it): the substring
/// `pause`, case-sensitive like `grep` without `-i`, anywhere in the name, tag or digest.
pub fn names_pause(listed: &str) -> bool {
    listed.contains("pause")
}

/// The order `sort` puts lines in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collation {
    /// `LC_ALL=C` (and `C.UTF-8` for ASCII): byte by byte.
    C,
    /// glibc's `en_US.UTF-8`, the locale CloudStack's node template sets.
    EnUs,
}

/// Compares `a` and `b` as `sort` does under `order`.
///
/// `EnUs` follows glibc's ISO 14651 table for ASCII, level by level: first the letters and digits
/// alone (digits before letters, case ignored, punctuation skipped), then their case (lower before
/// upper), then every character in turn with punctuation before digits before letters (so
/// `a.b` < `ab` and `b` < `b-`); equal strings last of all by bytes, as `sort` breaks ties. The
/// first level is glibc's exactly; the ties after it are glibc's in most cases, not all (module
/// doc).
pub fn collate(order: Collation, a: &str, b: &str) -> Ordering {
    match order {
        Collation::C => a.as_bytes().cmp(b.as_bytes()),
        Collation::EnUs => {
            let primary = |s: &str| -> Vec<u16> {
                s.bytes()
                    .filter(u8::is_ascii_alphanumeric)
                    .map(primary_weight)
                    .collect()
            };
            let case = |s: &str| -> Vec<bool> {
                s.bytes()
                    .filter(u8::is_ascii_alphanumeric)
                    .map(|b| b.is_ascii_uppercase())
                    .collect()
            };
            let every = |s: &str| -> Vec<u16> { s.bytes().map(fourth_weight).collect() };
            primary(a)
                .cmp(&primary(b))
                .then_with(|| case(a).cmp(&case(b)))
                .then_with(|| every(a).cmp(&every(b)))
                .then_with(|| a.as_bytes().cmp(b.as_bytes()))
        }
    }
}

/// glibc's first-level weight of a letter or digit: digits first, then letters without case.
/// Bytes beyond ASCII (never in an image name) sort after both.
fn primary_weight(b: u8) -> u16 {
    match b {
        b'0'..=b'9' => u16::from(b - b'0'),
        b'a'..=b'z' => 10 + u16::from(b - b'a'),
        b'A'..=b'Z' => 10 + u16::from(b - b'A'),
        other => 100 + u16::from(other),
    }
}

/// glibc 2.36's `en_US.UTF-8` order of ASCII punctuation, where only it decides.
const PUNCTUATION: &[u8] = b"$ !\"#%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// The last level's weight of any byte: punctuation (in [`PUNCTUATION`]'s order) before digits
/// before letters, lower case before upper.
fn fourth_weight(b: u8) -> u16 {
    match PUNCTUATION.iter().position(|&p| p == b) {
        Some(i) => i as u16,
        None if b.is_ascii_alphanumeric() => {
            100 + 2 * primary_weight(b) + u16::from(b.is_ascii_uppercase())
        }
        None => 300 + u16::from(b),
    }
}

/// What `grep pause | sort | tail -n 1` prints for `listed` under `order`; `None` when no name
/// contains `pause` (the node then keeps containerd's default sandbox image).
pub fn sandbox_pick<'a>(
    listed: impl IntoIterator<Item = &'a str>,
    order: Collation,
) -> Option<&'a str> {
    listed
        .into_iter()
        .filter(|n| names_pause(n))
        .max_by(|a, b| collate(order, a, b))
}

/// The image a node would run as its sandbox, in both orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// In the `en_US.UTF-8` locale CloudStack's node template sets.
    pub en_us: String,
    /// In the `C` locale.
    pub c: String,
}

/// The sandbox image nodes holding `listed` would run; `None` when no name contains `pause`.
pub fn sandbox<'a>(listed: impl IntoIterator<Item = &'a str> + Clone) -> Option<Sandbox> {
    Some(Sandbox {
        en_us: sandbox_pick(listed.clone(), Collation::EnUs)?.to_owned(),
        c: sandbox_pick(listed, Collation::C)?.to_owned(),
    })
}

/// `X`, or `X (in the en_US.UTF-8 locale CloudStack's node template sets; Y in the C locale)`.
impl fmt::Display for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.en_us == self.c {
            true => f.write_str(&self.en_us),
            false => write!(
                f,
                "{} (in the en_US.UTF-8 locale CloudStack's node template sets; {} in the C \
                 locale)",
                self.en_us, self.c
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in the order glibc 2.36's `LC_ALL=en_US.UTF-8 sort` printed them (the locale built
    /// with `localedef -i en_US -f UTF-8`).
    const EN_US_SORTED: &[&str] = &[
        "1a",
        "_a",
        "a-1",
        "a1",
        "a1-",
        "aa",
        "a.b",
        "ab",
        "aB",
        "Ab",
        "AB",
        "a-c",
        "b",
        "b-",
        "docker.io/library/pause:3.1",
        "docker.io/rancher/mirrored-pause:3.6",
        "quay.io/evil/pause-sandbox:1",
        "registry.k8s.io/pause:3",
        "registry.k8s.io/pause:3.10",
        "registry.k8s.io/pause:3.10.1",
        "registry.k8s.io/pause:3.9",
        "registry.k8s.io/pause@sha256:00",
        "registry.k8s.io/pause-x:1",
        "registry.k8s.io/pausex:1",
        "registry.k8s.io/sandbox:pause",
        "zz.example.org/evil/pause-sandbox:1",
    ];

    /// The same lines as `LC_ALL=C sort` printed them.
    const C_SORTED: &[&str] = &[
        "1a",
        "AB",
        "Ab",
        "_a",
        "a-1",
        "a-c",
        "a.b",
        "a1",
        "a1-",
        "aB",
        "aa",
        "ab",
        "b",
        "b-",
        "docker.io/library/pause:3.1",
        "docker.io/rancher/mirrored-pause:3.6",
        "quay.io/evil/pause-sandbox:1",
        "registry.k8s.io/pause-x:1",
        "registry.k8s.io/pause:3",
        "registry.k8s.io/pause:3.10",
        "registry.k8s.io/pause:3.10.1",
        "registry.k8s.io/pause:3.9",
        "registry.k8s.io/pause@sha256:00",
        "registry.k8s.io/pausex:1",
        "registry.k8s.io/sandbox:pause",
        "zz.example.org/evil/pause-sandbox:1",
    ];

    fn sorted(order: Collation, lines: &[&str]) -> Vec<String> {
        let mut v: Vec<&str> = lines.to_vec();
        v.reverse();
        v.sort_by(|a, b| collate(order, a, b));
        v.into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn both_orders_sort_as_glibc_sort_does() {
        assert_eq!(sorted(Collation::EnUs, EN_US_SORTED), EN_US_SORTED);
        assert_eq!(sorted(Collation::C, EN_US_SORTED), C_SORTED);
    }

    #[test]
    fn grep_matches_pause_anywhere_and_with_its_case() {
        for yes in [
            "registry.k8s.io/pause:3.10",
            "quay.io/evil/pause-sandbox:1",
            "docker.io/rancher/mirrored-pause:3.6",
            "docker.io/acme/tool:pause",
            "pause.example.org/x:1",
        ] {
            assert!(names_pause(yes), "{yes}");
        }
        for no in [
            "docker.io/acme/PAUSE:1",
            "docker.io/acme/paus:1",
            "docker.io/a/b:Pause",
        ] {
            assert!(!names_pause(no), "{no}");
        }
    }

    #[test]
    fn the_node_runs_the_last_pause_and_the_orders_can_disagree() {
        let kubeadm = "registry.k8s.io/pause:3.10";
        // The probe's image sorts after kubeadm's in both orders.
        let evil = [
            "quay.io/evil/pause-sandbox:1",
            "zz.example.org/evil/pause-sandbox:1",
        ];
        let picked = sandbox([kubeadm, evil[1], "docker.io/library/busybox:1"]).unwrap();
        assert_eq!(picked.to_string(), evil[1]);
        // Sorting before kubeadm's does not make it safe on an upgrade: the next ISO's pause may
        // sort before it. Here only the order decides.
        let names = [kubeadm, "registry.k8s.io/pause-x:1"];
        let picked = sandbox(names).unwrap();
        assert_eq!(picked.en_us, "registry.k8s.io/pause-x:1");
        assert_eq!(picked.c, kubeadm);
        let said = picked.to_string();
        assert!(
            said.starts_with("registry.k8s.io/pause-x:1 (in the en_US.UTF-8"),
            "{said}"
        );
        assert!(
            said.contains("registry.k8s.io/pause:3.10 in the C locale"),
            "{said}"
        );
        // 3.9 sorts after 3.10 in both: nodes run the older pause.
        let picked = sandbox([kubeadm, "registry.k8s.io/pause:3.9"]).unwrap();
        assert_eq!(picked.to_string(), "registry.k8s.io/pause:3.9");
        assert_eq!(sandbox(["docker.io/library/busybox:1"]), None);
        assert_eq!(sandbox_pick([], Collation::C), None);
    }
}
