#!/usr/bin/env bash
# Usage: fuzz/seed.sh TARGET — puts real inputs into fuzz/corpus/TARGET before `make fuzz` runs
# it, so libFuzzer mutates material the real Sigstore produced instead of starting from nothing:
# the bundles, trusted roots, checkpoints and RFC 3161 timestamps of the conformance cases under
# tests/sigstore-conformance and the verifier's own test data. Files are named by their SHA-1, as
# libFuzzer names its corpus, so seeding again adds nothing twice. Other targets get no seeds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${1:?usage: fuzz/seed.sh TARGET}
case $target in sigstore_bundle | trusted_root | checkpoint | rfc3161) ;; *) exit 0 ;; esac
mkdir -p "fuzz/corpus/$target"
python3 - "$target" <<'PY'
import base64, glob, hashlib, json, os, sys

target = sys.argv[1]
out = f"fuzz/corpus/{target}"
bundles = sorted(glob.glob("tests/sigstore-conformance/**/*.sigstore.json", recursive=True)
                 + glob.glob("tests/sigstore-conformance/**/bundle*.json", recursive=True)
                 + glob.glob("crates/cks-iso-sigstore/src/testdata/*.sigstore.json"))
roots = sorted(glob.glob("tests/sigstore-conformance/**/trusted_root*.json", recursive=True)
               + glob.glob("crates/cks-iso-sigstore/src/*.trusted_root.json"))

def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw, json.loads(raw)
    except ValueError:
        return raw, None

def seeds():
    if target == "trusted_root":
        for path in roots:
            yield open(path, "rb").read()
        return
    for path in bundles:
        raw, doc = load(path)
        if target == "sigstore_bundle":
            yield raw
            continue
        if not isinstance(doc, dict):
            continue
        material = doc.get("verificationMaterial") or {}
        if target == "checkpoint":
            for entry in material.get("tlogEntries") or []:
                envelope = ((entry.get("inclusionProof") or {}).get("checkpoint") or {}).get("envelope")
                if isinstance(envelope, str):
                    yield envelope.encode()
        elif target == "rfc3161":
            data = material.get("timestampVerificationData") or {}
            for stamp in data.get("rfc3161Timestamps") or []:
                try:
                    yield base64.b64decode(stamp.get("signedTimestamp", ""), validate=True)
                except ValueError:
                    pass

count = 0
for seed in seeds():
    name = os.path.join(out, hashlib.sha1(seed).hexdigest())
    if not os.path.exists(name):
        with open(name, "wb") as f:
            f.write(seed)
        count += 1
print(f"fuzz/seed.sh: {target}: {count} new seeds from the conformance data", file=sys.stderr)
PY
