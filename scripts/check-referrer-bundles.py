#!/usr/bin/env python3
"""Independent oracle for cks-iso's evidence of cosign 3 image signatures: Sigstore's own Python
client (`sigstore`, installed by `make deps` into .venv-sbom) verifies, fully offline with the
given trusted_root.json, identity and issuer, the DSSE bundle of every image of an extracted
ISO's signatures/report.json found as a referrer, and checks that the statement is cosign's
signature of the digest the report says was signed.

usage: check-referrer-bundles.py TREE TRUSTED_ROOT IDENTITY ISSUER
Prints `ok: N referrers` and exits 0, or names the first failure and exits 1.
"""

import json
import sys
from pathlib import Path

from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy

COSIGN_SIGN = "https://sigstore.dev/cosign/sign/v1"


def main() -> int:
    tree, root_path, identity, issuer = sys.argv[1:5]
    tree = Path(tree)
    report = json.loads((tree / "signatures/report.json").read_text())
    verifier = Verifier(trusted_root=TrustedRoot.from_file(root_path))
    wanted = policy.Identity(identity=identity, issuer=issuer)
    count = 0
    for entry in report["images"]:
        if entry.get("found") != "referrer":
            continue
        manifest = json.loads((tree / entry["signature_manifest"]).read_text())
        layer = manifest["layers"][0]["digest"].removeprefix("sha256:")
        blob = tree / "signatures/images/blobs/sha256" / layer
        try:
            bundle = Bundle.from_json(blob.read_bytes())
            kind, payload = verifier.verify_dsse(bundle=bundle, policy=wanted)
            statement = json.loads(payload)
            signed = entry["signed_digest"].removeprefix("sha256:")
            subjects = [s["digest"].get("sha256") for s in statement["subject"]]
            if kind != "application/vnd.in-toto+json" or signed not in subjects:
                raise ValueError(f"the statement ({kind}) names {subjects}, not {signed}")
            if statement["predicateType"] != COSIGN_SIGN:
                raise ValueError(f"predicate type {statement['predicateType']}")
        except Exception as e:  # noqa: BLE001 - any failure is the oracle's verdict
            print(f"{entry['reference']}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        count += 1
    print(f"ok: {count} referrers")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
