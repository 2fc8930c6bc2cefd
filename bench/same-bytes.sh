#!/bin/sh
# bench/same-bytes.sh: proves a refactoring left `cks-iso build`'s output byte for byte as it was.
# Run inside the local world, with BASE the binary of the previous main and NEW the one under test:
#   BASE=/tmp/cks-iso-base NEW=target/debug/cks-iso target/debug/cks-iso-world bench/same-bytes.sh
# Both build one request (amd64 and arm64, one SOURCE_DATE_EPOCH) with --lock-file, then both
# build --locked from BASE's lock; every ISO, .sha256, SBOM, the locks and the summaries (JSON and
# text, the output directory masked) must be identical. Exit 0 only then. For the paths the
# default request leaves out, SAME_BYTES_ARGS adds words to the request (add-on content) and
# SAME_BYTES_SIGNATURES sets every build's --signatures (`off`):
#   SAME_BYTES_ARGS="--image registry.k8s.io/headlamp/headlamp:v0.41.0" SAME_BYTES_SIGNATURES=off …
set -eu
BASE=${BASE:?the previous binary}
NEW=${NEW:?the binary under test}
D=$(mktemp -d "${TMPDIR:-/tmp}/same-bytes.XXXXXX")
trap 'rm -rf "$D"' EXIT
export SOURCE_DATE_EPOCH=1700000000
req="--kubernetes 1.33.1 --arch amd64 --arch arm64 --network $CKS_WORLD_NETWORK \
--dashboard $CKS_WORLD_DASHBOARD --no-progress ${SAME_BYTES_ARGS:-}"
sigs="--signatures ${SAME_BYTES_SIGNATURES:-verify}"
# shellcheck disable=SC2086 # $req and $sigs are lists of words
$BASE build $req $sigs --output "$D/base" --cache-dir "$D/cache-base" --lock-file "$D/base.lock" \
  --json >"$D/base.json"
# shellcheck disable=SC2086
$NEW build $req $sigs --output "$D/new" --cache-dir "$D/cache-new" --lock-file "$D/new.lock" \
  --json >"$D/new.json"
# shellcheck disable=SC2086
$BASE build $sigs --locked "$D/base.lock" --output "$D/base-locked" --cache-dir "$D/cache-bl" \
  >"$D/base-locked.txt"
# shellcheck disable=SC2086
$NEW build $sigs --locked "$D/base.lock" --output "$D/new-locked" --cache-dir "$D/cache-nl" \
  >"$D/new-locked.txt"
status=0
cmp "$D/base.lock" "$D/new.lock" || status=1
for f in "$D"/base/*; do cmp "$f" "$D/new/$(basename "$f")" || status=1; done
for f in "$D"/base-locked/*; do
  n=$(basename "$f")
  cmp "$f" "$D/new-locked/$n" || status=1
  cmp "$f" "$D/base/$n" || status=1
done
sed "s#$D/base#OUT#g" "$D/base.json" >"$D/a"
sed "s#$D/new#OUT#g" "$D/new.json" >"$D/b"
cmp "$D/a" "$D/b" || status=1
sed "s#$D/base-locked#OUT#g" "$D/base-locked.txt" >"$D/a"
sed "s#$D/new-locked#OUT#g" "$D/new-locked.txt" >"$D/b"
cmp "$D/a" "$D/b" || status=1
sha256sum "$D"/base/*.iso "$D"/new/*.iso "$D"/base-locked/*.iso "$D"/new-locked/*.iso
echo "same-bytes: status $status (0: every output identical)"
exit $status
