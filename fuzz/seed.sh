#!/usr/bin/env bash
# Usage: fuzz/seed.sh TARGET — puts real inputs into fuzz/corpus/TARGET before `make fuzz` runs
# it, so libFuzzer mutates material the real Sigstore produced instead of starting from nothing:
# the bundles, trusted roots, checkpoints and RFC 3161 timestamps of the conformance cases under
# tests/sigstore-conformance and the verifier's own test data. Files are named by their SHA-1, as
# libFuzzer names its corpus, so seeding again adds nothing twice. `iso_reader` gets two ISOs
# xorriso writes (Rock Ridge, nested directories, a hard link, a symlink), one with a sibling
# directory record pointed at its neighbour's extent, as the 30^6-path ISO of issue 44 was made,
# so that the fuzzer starts next to the shapes the reader's bounds refuse. Other targets get no
# seeds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${1:?usage: fuzz/seed.sh TARGET}
if [ "$target" = iso_reader ]; then
  mkdir -p fuzz/corpus/iso_reader
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  mkdir -p "$tree/root/a/x" "$tree/root/b/y"
  echo one >"$tree/root/a/x/f"
  ln "$tree/root/a/x/f" "$tree/root/b/y/g"
  ln -s ../a/x/f "$tree/root/b/link"
  xorriso -hardlinks on -as mkisofs -quiet -R -o "$tree/plain.iso" "$tree/root" 2>/dev/null
  python3 - "$tree/plain.iso" "$tree/shared.iso" <<'PY'
import sys
iso = bytearray(open(sys.argv[1], "rb").read())
root = 16 * 2048 + 156
extent = lambda at: int.from_bytes(iso[at + 2:at + 6], "little")
# The root's records after `.` and `..`: a, then b, directories; b is pointed at a's extent.
at = extent(root) * 2048
at += iso[at]; at += iso[at]
a = at; b = at + iso[at]
iso[b + 2:b + 18] = iso[a + 2:a + 18]
open(sys.argv[2], "wb").write(iso)
PY
  for iso in "$tree/plain.iso" "$tree/shared.iso"; do
    cp "$iso" "fuzz/corpus/iso_reader/$(sha1sum "$iso" | cut -c1-40)"
  done
  echo "fuzz/seed.sh: iso_reader: 2 seeds written by xorriso" >&2
  exit 0
fi
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
