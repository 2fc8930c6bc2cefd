//! The rules for the ISO's root manifests (`*.yaml`): valid YAML, no joined separators, pull
//! policies an air-gapped node can live with, the autoscaler's placeholders kept, every image
//! named bundled. Apart from the other checks because a manifest is judged as text, as structure
//! and as a list of images, each its own step.

use std::collections::BTreeSet;

use super::ctx::{Ctx, matching};
use crate::image::Reference;
use crate::manifest;
use serde_json::Value;

/// Root manifests: valid YAML, no joined separators, `IfNotPresent` only (written, or by default
/// for a container that says nothing), placeholders kept, and every image they reference bundled;
/// returns the images they reference, normalised.
pub(super) fn yamls(cx: &mut Ctx, bundled: &BTreeSet<String>) -> BTreeSet<String> {
    let bundled: BTreeSet<String> = bundled
        .iter()
        .filter_map(|n| Reference::parse(n).ok().map(|r| r.to_string()))
        .collect();
    let roots: Vec<String> = matching(cx, "", "", ".yaml");
    let mut named = BTreeSet::new();
    for path in roots {
        let Some(text) = cx.text(&path) else { continue };
        for joined in manifest::find_joined_separators(&text) {
            cx.violation(
                &path,
                format!(
                    "line {} joins two documents: {:?}",
                    joined.line, joined.text
                ),
            );
        }
        written_policies(cx, &path, &text);
        let unsaid = unsaid_always(cx, &path, &text);
        if path == "autoscaler.yaml" {
            placeholders(cx, &path, &text);
        }
        let docs = match manifest::check_yaml(&path, &text) {
            Ok(docs) => docs,
            Err(e) => {
                cx.violation(&path, chain(&e));
                continue;
            }
        };
        flow_always(cx, &path, &docs, unsaid);
        named.extend(images(cx, &path, &docs, &bundled));
    }
    named
}

/// Every `imagePullPolicy:` written must say `IfNotPresent`.
fn written_policies(cx: &mut Ctx, path: &str, text: &str) {
    for (i, line) in text.lines().enumerate() {
        if let Some(v) = line
            .trim_start()
            .trim_start_matches("- ")
            .strip_prefix("imagePullPolicy:")
            && v.split('#')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\''])
                != "IfNotPresent"
        {
            cx.violation(
                path,
                format!(
                    "line {}: imagePullPolicy:{v}; an air-gapped node needs IfNotPresent",
                    i + 1
                ),
            );
        }
    }
}

/// Containers in block style pulled `Always` because they say nothing (an explicit policy is
/// judged by [`written_policies`]); their images, for [`flow_always`].
fn unsaid_always(cx: &mut Ctx, path: &str, text: &str) -> Vec<String> {
    let mut unsaid: Vec<String> = Vec::new();
    for c in manifest::containers(text) {
        if c.policy.is_none() && c.effective_policy() == "Always" {
            cx.violation(
                path,
                format!(
                    "line {}: {} has no imagePullPolicy and an untagged or :latest image, so \
                     Kubernetes pulls it Always; an air-gapped node needs IfNotPresent",
                    c.line, c.image
                ),
            );
            unsaid.push(c.image);
        }
    }
    unsaid
}

/// The autoscaler's placeholders, which CloudStack fills in with sed.
fn placeholders(cx: &mut Ctx, path: &str, text: &str) {
    for placeholder in ["<min>", "<max>", "<cluster-id>"] {
        if !text.contains(placeholder) {
            cx.violation(
                path,
                format!("the placeholder {placeholder} is gone; CloudStack fills it in with sed"),
            );
        }
    }
}

/// Containers pulled `Always` that the parsed documents find and the block-style reading did
/// not (`unsaid`): those written in flow style.
fn flow_always(cx: &mut Ctx, path: &str, docs: &[Value], mut unsaid: Vec<String>) {
    for image in manifest::parsed_always(docs) {
        match unsaid.iter().position(|u| *u == image) {
            Some(found) => {
                unsaid.remove(found);
            }
            None => cx.violation(
                path,
                format!(
                    "a container of {image} (in flow style) has no imagePullPolicy and an \
                     untagged or :latest image, so Kubernetes pulls it Always; an air-gapped \
                     node needs IfNotPresent"
                ),
            ),
        }
    }
}

/// The images the documents reference, normalised; each must be `bundled`.
fn images(
    cx: &mut Ctx,
    path: &str,
    docs: &[Value],
    bundled: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for image in manifest::images(docs) {
        match Reference::parse(&image) {
            Ok(r) if bundled.contains(&r.to_string()) => {
                named.insert(r.to_string());
            }
            Ok(r) => {
                cx.violation(
                    path,
                    format!(
                        "references {r}, which is not bundled (an air-gapped node cannot pull \
                         it): no archive in docker/ holds it; rebuild the ISO with cks-iso \
                         build, which pulls every image a root *.yaml names"
                    ),
                );
                named.insert(r.to_string());
            }
            Err(e) => cx.violation(path, format!("references {image:?}: {e}")),
        }
    }
    named
}

/// An error and its causes on one line.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cur = e.source();
    }
    text
}
