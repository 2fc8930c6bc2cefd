#!/usr/bin/env python3
"""Independent oracle for the image signatures in an extracted CKS ISO.

Re-checks every `verified` entry of `signatures/report.json` against a Sigstore
`trusted_root.json` with Python's `cryptography`, sharing no code with cks-iso: payload digest,
Rekor SET (RFC 8785 form of the four fields), hashedrekord body, Fulcio chain, embedded SCT
(RFC 6962 precertificate entry, `tbs_precertificate_bytes`), signature, time, identity, issuer
(.1.8, else .1.1) and the signed digest. Exits 1 naming the first problem. Entries found as
cosign 3 referrers (`"found": "referrer"`, a DSSE bundle) are check-referrer-bundles.py's.

usage: check-image-signatures.py ISO_ROOT TRUSTED_ROOT_JSON IDENTITY ISSUER
"""
import base64
import calendar
import hashlib
import json
import struct
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


def fail(what):
    print(f"check-image-signatures: {what}", file=sys.stderr)
    sys.exit(1)


def b64(text):
    return base64.b64decode(text)


def spki(key):
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def main():
    iso, root_path, identity, issuer = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    root = json.loads(Path(root_path).read_text())
    tlogs = {b64(t["logId"]["keyId"]): serialization.load_der_public_key(b64(t["publicKey"]["rawBytes"]))
             for t in root["tlogs"]}
    ctlogs = {b64(t["logId"]["keyId"]): serialization.load_der_public_key(b64(t["publicKey"]["rawBytes"]))
              for t in root["ctlogs"]}
    cas = [[x509.load_der_x509_certificate(b64(c["rawBytes"])) for c in ca["certChain"]["certificates"]]
           for ca in root["certificateAuthorities"]]
    report = json.loads((iso / "signatures/report.json").read_text())
    checked = 0
    for image in report["images"]:
        if image["verdict"] != "verified" or image.get("found") == "referrer":
            continue
        name = image["reference"]
        raw = (iso / image["signature_manifest"]).read_bytes()
        if hashlib.sha256(raw).hexdigest() != Path(image["signature_manifest"]).stem:
            fail(f"{name}: signature manifest does not hash to its name")
        manifest = json.loads(raw)
        errors = []
        for layer in manifest["layers"]:
            try:
                check_layer(iso, layer, image["signed_digest"], tlogs, ctlogs, cas, identity, issuer)
                break
            except ValueError as e:
                errors.append(str(e))
        else:
            fail(f"{name}: no layer verifies: {'; '.join(errors)}")
        checked += 1
    print(f"ok: {checked} image signatures verified independently")


def check_layer(iso, layer, signed, tlogs, ctlogs, cas, identity, issuer):
    hexd = layer["digest"].split(":", 1)[1]
    payload = (iso / "signatures/images/blobs/sha256" / hexd).read_bytes()
    if hashlib.sha256(payload).hexdigest() != hexd:
        raise ValueError("payload digest")
    ann = layer["annotations"]
    sig = b64(ann["dev.cosignproject.cosign/signature"])
    leaf = x509.load_pem_x509_certificate(ann["dev.sigstore.cosign/certificate"].encode())
    bundle = json.loads(ann["dev.sigstore.cosign/bundle"])
    p = bundle["Payload"]
    key = tlogs.get(bytes.fromhex(p["logID"]))
    if key is None:
        raise ValueError("unknown Rekor log")
    canonical = json.dumps({k: p[k] for k in ("body", "integratedTime", "logID", "logIndex")},
                           sort_keys=True, separators=(",", ":")).encode()
    try:
        key.verify(b64(bundle["SignedEntryTimestamp"]), canonical, ec.ECDSA(hashes.SHA256()))
    except Exception:
        raise ValueError("SET")
    body = json.loads(b64(p["body"]))
    spec = body["spec"]
    if (body["kind"], spec["data"]["hash"]["value"]) != ("hashedrekord", hashlib.sha256(payload).hexdigest()):
        raise ValueError("Rekor body hash")
    if b64(spec["signature"]["content"]) != sig:
        raise ValueError("Rekor body signature")
    logged = x509.load_pem_x509_certificate(b64(spec["signature"]["publicKey"]["content"]))
    if logged != leaf:
        raise ValueError("Rekor body certificate")
    t = p["integratedTime"]
    chain = None
    for ca in cas:
        try:
            leaf.verify_directly_issued_by(ca[0])
            for a, b in zip(ca, ca[1:]):
                a.verify_directly_issued_by(b)
            chain = ca
            break
        except Exception:
            continue
    if chain is None:
        raise ValueError("chain")
    scts = leaf.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value
    issuer_hash = hashlib.sha256(spki(chain[0].public_key())).digest()
    tbs = leaf.tbs_precertificate_bytes
    ok = False
    for sct in scts:
        ct = ctlogs.get(sct.log_id)
        if ct is None:
            continue
        ms = calendar.timegm(sct.timestamp.utctimetuple()) * 1000 + sct.timestamp.microsecond // 1000
        data = (struct.pack(">BBQH", 0, 0, ms, 1) + issuer_hash + len(tbs).to_bytes(3, "big") + tbs
                + struct.pack(">H", len(sct.extension_bytes)) + sct.extension_bytes)
        try:
            ct.verify(sct.signature, data, ec.ECDSA(hashes.SHA256()))
            ok = True
        except Exception:
            pass
    if not ok:
        raise ValueError("SCT")
    try:
        leaf.public_key().verify(sig, payload, ec.ECDSA(hashes.SHA256()))
    except Exception:
        raise ValueError("signature")
    if not (leaf.not_valid_before_utc.timestamp() <= t <= leaf.not_valid_after_utc.timestamp()):
        raise ValueError("time")
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    if identity not in san.get_values_for_type(x509.RFC822Name):
        raise ValueError("identity")
    exts = {e.oid: e.value for e in leaf.extensions}
    if ISSUER_V2 in exts:
        got = exts[ISSUER_V2].value[2:].decode()
    else:
        got = exts[ISSUER_V1].value.decode()
    if got != issuer:
        raise ValueError("issuer")
    claim = json.loads(payload)["critical"]
    if claim["type"] != "cosign container image signature" or claim["image"]["docker-manifest-digest"] != signed:
        raise ValueError("signed digest")


if __name__ == "__main__":
    main()
