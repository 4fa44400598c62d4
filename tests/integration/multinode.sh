#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two mf-server nodes on one PostgreSQL store and one shared data directory (blobs, director
# key), as ops would run them behind a load balancer. Shows that:
#   - a device's check-ins answered alternately by either node agree (same release, same
#     blob) and its assignment sequence grows strictly across nodes;
#   - a pin or fleet rollback set through one node is obeyed by the other's next check-in;
#   - a release published through one node is served by the other at once, and a delta
#     stored by either node's worker is offered by both (their check-in caches follow the
#     store generation);
#   - each background job (delta precompute of a new release) ran exactly once although both
#     nodes run a worker: every job is done after one attempt, each delta stored once;
#   - a distillation run started through one node runs once, on one node's distill worker,
#     and both nodes show its provenance.
# Usage: with_db.sh multinode multinode.sh BIN_DIR   (ctest: integration_multinode)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
: "${MF_TEST_STORE_URL:?run through tests/pg/with_db.sh (PostgreSQL store)}"

work=$(mktemp -d /tmp/mf-multi.XXXXXX)
pid_b=""
stop_b() {
    [ -n "$pid_b" ] || return 0
    kill -TERM "$pid_b" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid_b" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid_b" 2>/dev/null
    wait "$pid_b" 2>/dev/null
    pid_b=""
}
trap 'stop_b; mf_stack_stop; rm -rf "$work"' EXIT
sql() { psql -qtA -v ON_ERROR_STOP=1 "$MF_TEST_STORE_URL" -c "$1"; }

# The loop's inputs, the same for both nodes: a small teacher (seconds) and Fashion-MNIST.
FM=/usr/share/datasets/fashion-mnist
"$BIN/mf-train-teacher" --train-images $FM/train-images-idx3-ubyte.gz \
    --train-labels $FM/train-labels-idx1-ubyte.gz --hidden 64 --epochs 1 \
    --out "$work/teacher.safetensors" >"$work/teacher.log" 2>&1 || { cat "$work/teacher.log"; exit 1; }
cat >"$work/offload.json" <<JSON
{"models": {"fashion": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}}}}
JSON
cat >"$work/distill.json" <<JSON
{"models": {"fashion": {
  "data": $(mf_fashion_data 0 1000 0.02 1000),
  "trainer": {"epochs": 2}, "release": {"key": "$work/keys/release.pem"}}}}
JSON
loop_args="--offload-config $work/offload.json --distill-config $work/distill.json"

# Node A: init + serve on the PostgreSQL store (stack.sh). Node B: the same data directory and
# store, its own port.
MF_SERVE_ARGS=$loop_args mf_stack_start "$work/data" "$work/nodeA.log" || exit 1
url_a=$MF_URL
# shellcheck disable=SC2086 # loop_args: two options and their values
"$BIN/mf-server" serve --data-dir "$work/data" --store "$MF_TEST_STORE_URL" \
    --listen 127.0.0.1:0 --port-file "$work/port-b" $loop_args >>"$work/nodeB.log" 2>&1 &
pid_b=$!
for _ in $(seq 1 100); do [ -s "$work/port-b" ] && break; sleep 0.1; done
[ -s "$work/port-b" ] || { echo "node B did not listen within 10 s"; cat "$work/nodeB.log"; exit 1; }
url_b="http://127.0.0.1:$(cat "$work/port-b")"
check "two nodes up on one store" test "$url_a" != "$url_b"

check "trust installed through node A" mf_trust_setup "$work/keys"
# v2 and v3 share most bytes with v1, so their deltas are worth keeping.
mf_make_model "$work/v1.bin" 1048576 multi-v1
cp "$work/v1.bin" "$work/v2.bin"
printf 'v2-change' | dd of="$work/v2.bin" bs=1 seek=4096 conv=notrunc status=none
cp "$work/v2.bin" "$work/v3.bin"
printf 'v3-change' | dd of="$work/v3.bin" bs=1 seek=700000 conv=notrunc status=none
check "publish v1 through node A" mf_publish detector v1 "$work/v1.bin"

# Enrolment through node B; the credential works on both.
enroll=$(cat "$MF_ENROLL_TOKEN_FILE")
cred=$(curl -s -X POST -H 'Content-Type: application/json' \
    --data "{\"enrollment_token\":\"$enroll\",\"device_id\":\"cam-1\"}" "$url_b/v1/enroll" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])')
check "device enrolled through node B" test -n "$cred"

# checkin URL: prints "<version> <sha256> <release digest> <assignment sequence>".
checkin() {
    local nonce
    nonce=$(openssl rand -hex 16)
    curl -s -H "Authorization: Bearer $cred" -H 'Content-Type: application/json' \
        --data "{\"nonce\":\"$nonce\",\"root_version\":1,\"keys_version\":1,\"models\":[{\"name\":\"detector\"}]}" \
        "$1/v1/checkin" | python3 -c '
import base64, json, sys
a = json.load(sys.stdin)["assignments"][0]
p = json.loads(base64.b64decode(json.loads(a["assignment"])["payload"]))
print(a["version"], a["sha256"], p.get("release_sha256", p.get("release", "")),
      p["sequence"])'
}

# alternate N VERSION: N check-ins, A B A B ...; all name VERSION and one release, and the
# sequence grows strictly from one answer to the next whichever node gave it.
alternate() {
    local n=$1 want=$2 last=${3:-0} i url line first=""
    for i in $(seq 1 "$n"); do
        url=$url_a
        [ $((i % 2)) -eq 0 ] && url=$url_b
        line=$(checkin "$url") || return 1
        set -- $line
        [ "$1" = "$want" ] || { echo "  check-in $i: version $1, want $want"; return 1; }
        [ -z "$first" ] && first="$1 $2 $3"
        [ "$first" = "$1 $2 $3" ] || { echo "  check-in $i disagrees: $line"; return 1; }
        [ "$4" -gt "$last" ] || { echo "  check-in $i: sequence $4 after $last"; return 1; }
        last=$4
    done
    echo "$last" >"$work/last-seq"
}
check "8 check-ins alternating nodes agree on v1, sequence strictly increasing" alternate 8 v1
publish_via_b() {
    local MF_URL=$url_b
    mf_deploy "$@"
}
check "publish v2 through node B" publish_via_b detector v2 "$work/v2.bin"
check "both nodes assign v2 at once, sequence still increasing" alternate 6 v2 "$(cat "$work/last-seq")"
check "publish v3 through node A" mf_deploy detector v3 "$work/v3.bin"
check "both nodes assign v3" alternate 4 v3 "$(cat "$work/last-seq")"

# Pins raise the store generation too: both nodes have just answered cam-1 with no pin on
# the model (and skip its pin reads while nothing changed), yet a pin set through one node
# is obeyed by the other's next check-in, and so is its removal.
version_via() { set -- $(checkin "$1"); echo "$1"; }
mfctl_via_b() {
    local MF_URL=$url_b
    mfctl_admin "$@"
}
check "pin cam-1 to v2 through node A" mfctl_admin pins set device cam-1 detector v2
check "  ... node B's next check-in obeys it" test "$(version_via "$url_b")" = v2
check "  ... and node A's" test "$(version_via "$url_a")" = v2
check "fleet rollback to v1 through node B" mfctl_via_b rollback start detector v1
check "  ... node A's next check-in keeps the device pin (it outranks the rollback)" \
    test "$(version_via "$url_a")" = v2
check "clear the pin through node B" mfctl_via_b pins clear device cam-1 detector
check "  ... node A's next check-in follows the rollback" test "$(version_via "$url_a")" = v1
check "end the rollback through node A" mfctl_admin rollback stop detector
check "  ... node B's next check-in is back on v3" test "$(version_via "$url_b")" = v3
check "  ... and node A's" test "$(version_via "$url_a")" = v3

# deltas_offered URL: how many deltas an answer offers a device that runs v2 (its bytes).
v2sha=$(sha256sum "$work/v2.bin" | cut -c1-64)
deltas_offered() {
    curl -s -H "Authorization: Bearer $cred" -H 'Content-Type: application/json' \
        --data "{\"nonce\":\"$(openssl rand -hex 16)\",\"root_version\":1,\"keys_version\":1,\"models\":[{\"name\":\"detector\",\"version\":\"v2\",\"sha256\":\"$v2sha\"}]}" \
        "$1/v1/checkin" | python3 -c '
import json, sys
print(len(json.load(sys.stdin)["assignments"][0].get("deltas", [])))'
}
# Asked on both nodes now, while the workers may still be computing: each node's check-in
# cache then holds "no delta yet", which the delta's insert must invalidate on both.
deltas_offered "$url_a" >/dev/null
deltas_offered "$url_b" >/dev/null

# Background jobs: each release enqueued delta work; both nodes' workers compete for it.
jobs_settled() {
    for _ in $(seq 1 150); do
        [ "$(sql "SELECT count(*) FROM jobs WHERE state IN ('queued','running')")" = 0 ] &&
            [ "$(sql "SELECT count(*) FROM jobs")" -ge 2 ] && return 0
        sleep 0.2
    done
    return 1
}
if [ "$(sql "SELECT to_regclass('jobs') IS NOT NULL")" = t ]; then
    check "every delta job finished within 30 s" jobs_settled
    check "  ... each done after exactly one attempt (ran once across nodes)" \
        test "$(sql "SELECT count(*) FROM jobs WHERE state <> 'done' OR attempts <> 1")" = 0
    check "  ... one job per release, none duplicated" \
        test "$(sql "SELECT count(*) - count(DISTINCT (kind, arg)) FROM jobs")" = 0
    check "  ... deltas to v2 and v3 stored once each" \
        test "$(sql "SELECT count(*) FROM deltas")" -ge 2
    check "  ... and their blobs are in the shared blob directory" bash -c "
        for s in \$(psql -qtA '$MF_TEST_STORE_URL' -c 'SELECT delta_sha256 FROM deltas'); do
            test -s '$work/data/blobs/'\${s:0:2}/\$s || exit 1; done"
    # The nodes cache what check-ins read (trust, releases, deltas) per store generation,
    # which every change raises: a delta stored by either worker is offered by both at once.
    check "  ... node A offers the v2 -> v3 delta as soon as it is stored" \
        test "$(deltas_offered "$url_a")" = 1
    check "  ... node B offers it too" test "$(deltas_offered "$url_b")" = 1
else
    check "the store has a jobs table" false
fi

# The distillation loop on two nodes: started through B, waited for through A.
run_via_b() {
    local MF_URL=$url_b
    mfctl_admin distill run fashion >/dev/null
}
check "a distillation run queued through node B" run_via_b
check "  ... node A sees it publish the seed student d1" \
    sh -c "'$BIN/mfctl' --server '$url_a' --token-file '$MF_ADMIN_TOKEN_FILE' distill wait 1 120 |
           grep -q 'run 1: fashion published'"
check "  ... it ran on exactly one node" test "$(cat "$work"/node*.log |
    grep -c 'distillation run 1 of fashion: published')" = 1
check "  ... its job done after one attempt" \
    test "$(sql "SELECT count(*) FROM jobs WHERE kind = 'distill' AND state = 'done' AND attempts = 1")" = 1
check "  ... node B shows d1's provenance" sh -c "'$BIN/mfctl' --server '$url_b' --token-file \
    '$MF_ADMIN_TOKEN_FILE' versions show fashion d1 | grep -q 'provenance: made by run 1'"

echo "$MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    for f in "$work"/node*.log; do echo "--- $f (tail)"; tail -20 "$f"; done
    exit 1
fi
