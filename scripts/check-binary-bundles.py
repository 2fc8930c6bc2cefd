#!/usr/bin/env python3
"""Independent oracle for cks-iso's binary signature evidence: Sigstore's own Python client
(`sigstore`, installed by `make deps` into .venv-sbom) verifies every bundle under
signatures/binaries/ of an extracted ISO against the binary beside it, fully offline, with the
given trusted_root.json, identity and issuer.

usage: check-binary-bundles.py TREE TRUSTED_ROOT IDENTITY ISSUER
Prints `ok: N bundles` and exits 0, or names the first failure and exits 1.
"""

import json
import sys
from pathlib import Path

from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy


def main() -> int:
    tree, root_path, identity, issuer = sys.argv[1:5]
    tree = Path(tree)
    report = json.loads((tree / "signatures/report.json").read_text())
    verifier = Verifier(trusted_root=TrustedRoot.from_file(root_path))
    wanted = policy.Identity(identity=identity, issuer=issuer)
    count = 0
    for entry in report.get("binaries", []):
        if entry["verdict"] != "verified":
            continue
        bundle = Bundle.from_json((tree / entry["bundle"]).read_bytes())
        data = (tree / entry["path"]).read_bytes()
        try:
            verifier.verify_artifact(input_=data, bundle=bundle, policy=wanted)
        except Exception as e:  # noqa: BLE001 - any failure is the oracle's verdict
            print(f"{entry['path']}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        count += 1
    print(f"ok: {count} bundles")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
