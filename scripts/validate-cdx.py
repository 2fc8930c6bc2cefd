#!/usr/bin/env python3
"""Validates CycloneDX 1.6 JSON files with cyclonedx-python-lib's strict schema validator.

Usage: validate-cdx.py FILE...  (run with the virtualenv `make deps` fills, .venv-sbom/bin/python)
Prints every error and exits 1 when a file is not valid CycloneDX 1.6.
"""
import sys

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

validator = JsonStrictValidator(SchemaVersion.V1_6)
failed = False
for path in sys.argv[1:]:
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
        print(f"{path}: valid CycloneDX 1.6")
sys.exit(1 if failed or len(sys.argv) < 2 else 0)
