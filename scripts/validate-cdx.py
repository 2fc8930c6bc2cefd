#!/usr/bin/env python3
"""Validates CycloneDX JSON files (1.6, or the version `--spec` names) with cyclonedx-python-lib's
strict schema validator.

Usage: validate-cdx.py [--spec 1.5] FILE...  (run with the virtualenv `make deps` fills,
.venv-sbom/bin/python). Prints every error and exits 1 when a file is not valid.
`make test-dist` passes `--spec 1.5`: cargo-cyclonedx writes 1.5 at most.
"""
import sys

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

args = sys.argv[1:]
spec = "1.6"
if args[:1] == ["--spec"]:
    spec, args = args[1], args[2:]
validator = JsonStrictValidator(SchemaVersion.from_version(spec))
failed = False
for path in args:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = validator.validate_str(text, all_errors=True)
    errors = [] if found is None else list(found)
    if errors:
        failed = True
        for error in errors:
            detail = getattr(error, "data", None)  # the jsonschema error, when there is one
            where = getattr(detail, "json_path", "")
            print(f"{path}: {where}: {getattr(detail, 'message', error)}", file=sys.stderr)
    else:
        print(f"{path}: valid CycloneDX {spec}")
sys.exit(1 if failed or not args else 0)
