//! The pause rule on an ISO's images, as nodes apply it: CloudStack's `setup-kube-system` sets
//! every pod's sandbox image to `ctr -n k8s.io images ls -q | grep pause | sort | tail -n 1`
//! ([`crate::plan::sandbox`]), so every image whose name contains `pause` is a candidate, not only
//! a repository named `pause`. An ISO must hold exactly one: kubeadm's, when its release says
//! which (a cks-iso ISO's lock or `versions.txt`), else one at all (an ISO from elsewhere).

use super::ctx::Ctx;
use crate::contract;
use crate::image::Reference;
use crate::plan::sandbox::{self, NODE_RULE};

/// How the node's rule reads in a violation.
fn rule() -> String {
    format!(
        "CloudStack's node script sets every pod's sandbox image to the output of `{NODE_RULE}`, \
         which selects every image whose name contains \"pause\""
    )
}

/// `held`: each archive and a name containerd lists for it; `kubeadm`: kubeadm's pause image,
/// normalised, when the release says which; `unreadable`: archives meant as the pause image (by
/// their file name) that nodes cannot import, already reported.
pub(super) fn check(
    cx: &mut Ctx,
    held: &[(String, String)],
    kubeadm: Option<&str>,
    unreadable: usize,
) {
    let normal = |n: &str| Reference::parse(n).map_or_else(|_| n.to_owned(), |r| r.to_string());
    let candidates: Vec<(&str, String)> = held
        .iter()
        .filter(|(_, name)| sandbox::names_pause(name))
        .map(|(archive, name)| (archive.as_str(), normal(name)))
        .collect();
    let picked = sandbox::sandbox(candidates.iter().map(|(_, n)| n.as_str()));
    let run = |picked: &Option<sandbox::Sandbox>| match picked {
        Some(p) => format!("nodes would run {p}"),
        None => "nodes fall back to containerd's default sandbox image, which an air-gapped \
                 node cannot pull"
            .to_owned(),
    };
    match kubeadm {
        Some(want) => {
            for (archive, name) in candidates.iter().filter(|(_, n)| n != want) {
                cx.violation(
                    archive,
                    format!(
                        "holds {name}, a second pause image: {}; {}; bundle only kubeadm's {want}",
                        rule(),
                        run(&picked)
                    ),
                );
            }
            if unreadable == 0 && !candidates.iter().any(|(_, n)| n == want) {
                cx.violation(
                    contract::IMAGES_DIR,
                    format!(
                        "no archive holds kubeadm's pause image {want}: {}",
                        run(&picked)
                    ),
                );
            }
        }
        None => {
            let count = candidates.len() + unreadable;
            if count != 1 {
                let names: Vec<&str> = candidates.iter().map(|(_, n)| n.as_str()).collect();
                cx.violation(
                    contract::IMAGES_DIR,
                    format!(
                        "{count} pause images{}: {}; {}; bundle exactly one, kubeadm's",
                        match names.is_empty() {
                            true => String::new(),
                            false => format!(" ({})", names.join(", ")),
                        },
                        rule(),
                        run(&picked)
                    ),
                );
            }
        }
    }
}
