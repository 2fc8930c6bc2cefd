#!/usr/bin/env python3
"""Turns cargo-cyclonedx's SBOM into the SBOM of one target's binary, independent of the checkout.

Usage: dist-sbom.py RAW.cdx.json WORKSPACE_ROOT CRATES.txt > OUT.cdx.json   (scripts/dist.sh)

CRATES.txt is `cargo tree -e normal --target T -p cks-iso` as `name version` lines: what cargo
compiles into that binary. Two things are corrected, nothing else is touched:
- cargo-cyclonedx 0.5.9 also lists the dependencies of features nothing enables (reqwest's
  quinn for HTTP/3, …; CycloneDX/cyclonedx-rust-cargo#766, open): components not in CRATES.txt
  are dropped, with their entries and mentions in `dependencies`;
- the bom-refs of the workspace's own crates are cargo package ids holding the checkout's
  absolute path (`path+file:///home/me/cks-iso/crates/cks-iso-io#0.1.0`): it becomes `.`, so two
  clones in two places give the same SBOM. (SOURCE_DATE_EPOCH gives its timestamp and drops the
  random serial number: cargo-cyclonedx honours it.)
It fails when a crate of CRATES.txt is missing, when a reference dangles, or when there is no
timestamp, so a changed cargo-cyclonedx output cannot slip through.
"""
import json
import sys

raw, root, crates_file = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
with open(raw, encoding="utf-8") as f:
    text = f.read()
text = text.replace("file://" + root + "/", "file://./").replace("file://" + root + "#", "file://.#")
if root in text:
    sys.exit(f"{raw}: the checkout's path {root} is still in the SBOM after rewriting file:// URLs")
bom = json.loads(text)
with open(crates_file, encoding="utf-8") as f:
    crates = {line.strip() for line in f if line.strip()}
if "timestamp" not in bom.get("metadata", {}):
    sys.exit(f"{raw}: expected metadata.timestamp (from SOURCE_DATE_EPOCH), found none")

components = bom.get("components", [])
kept = [c for c in components if f"{c['name']} {c['version']}" in crates]
missing = crates - {f"{c['name']} {c['version']}" for c in kept}
if missing:
    sys.exit(f"{raw}: expected every crate cargo compiles in, missing {sorted(missing)}")
refs = {c["bom-ref"] for c in kept} | {bom["metadata"]["component"]["bom-ref"]}
bom["components"] = kept
dependencies = []
for entry in bom.get("dependencies", []):
    if entry["ref"] in refs:
        entry["dependsOn"] = [d for d in entry.get("dependsOn", []) if d in refs]
        dependencies.append(entry)
bom["dependencies"] = dependencies
json.dump(bom, sys.stdout, indent=2, ensure_ascii=False)
sys.stdout.write("\n")
