"""The Python `cs` client (PyPI `cs`, exoscale) against the CloudStack stand-in: the proof that
the stand-in answers a real client nobody here wrote as CloudStack does, before cks-iso is
judged by it. Usage: cs_calls.py ENDPOINT KEY SECRET PHASE [ARGS...]; prints one JSON object.
"""

import json
import sys
import time

from cs import CloudStack, CloudStackApiException

endpoint, key, secret, phase = sys.argv[1:5]
rest = sys.argv[5:]
get = CloudStack(endpoint=endpoint, key=key, secret=secret, method="get")
post = CloudStack(endpoint=endpoint, key=key, secret=secret, method="post")
out = {}

if phase == "register":
    url, checksum = rest
    caps = get.listCapabilities()["capability"]
    out["version"] = caps["cloudstackversion"]
    out["zones"] = [z["name"] for z in get.listZones()["zone"]]
    added = post.addKubernetesSupportedVersion(
        semanticversion="1.33.1", name="cs-v1.33.1", url=url, checksum=checksum,
        mincpunumber=2, minmemory=2048, arch="x86_64",
    )["kubernetessupportedversion"]
    out["added_isostate"] = added["isostate"]
    for _ in range(100):
        [v] = get.listKubernetesSupportedVersions(id=added["id"])["kubernetessupportedversion"]
        if v["isostate"] != "Creating":
            break
        time.sleep(0.1)
    out["isostate"] = v["isostate"]
    out["arch"] = v["arch"]
    out["id"] = v["id"]
    isos = get.listIsos(id=v["isoid"], isofilter="all")["iso"]
    out["zones_ready"] = [i["isready"] for i in isos]
    out["checksum"] = isos[0]["checksum"]
    try:
        post.addKubernetesSupportedVersion(
            semanticversion="1.33.1", url=url, mincpunumber=1, minmemory=2048,
        )
    except CloudStackApiException as e:
        out["too_few_cpus"] = [e.response.status_code, e.error["errorcode"], e.error["errortext"]]
elif phase == "delete":
    [version] = rest
    try:
        out["deleted"] = post.deleteKubernetesSupportedVersion(id=version, fetch_result=True)
    except CloudStackApiException as e:
        out["job_failed"] = e.error
elif phase == "wrong-secret":
    wrong = CloudStack(endpoint=endpoint, key=key, secret=secret + "x")
    try:
        wrong.listCapabilities()
    except CloudStackApiException as e:
        out["refused"] = [e.response.status_code, e.error["errortext"]]
elif phase == "tilde":
    # cs encodes as RFC 3986 (`~` kept) where CloudStack's URLEncoder writes %7E: refused.
    try:
        get.listKubernetesSupportedVersions(keyword="~v1")
    except CloudStackApiException as e:
        out["refused"] = e.response.status_code

print(json.dumps(out))
