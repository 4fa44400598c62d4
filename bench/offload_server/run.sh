#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Uplink throughput of mf-server (docs/offload.md, "Measured"): wrk on loopback posts
# POST /v1/offload/batch with batches of 64 samples of 784 input bytes (batch.lua) from
# several enrolled devices to one node on the SQLite store; prints samples/s and input MiB/s.
# No teacher is configured, so this is the ingest path alone (parse, base64, content-
# addressed input blobs, one transaction per batch); labelling runs later and apart.
# Not a test: it takes SECONDS (default 10) plus set-up.
# Usage: bench/offload_server/run.sh BIN_DIR [SECONDS]   (BIN_DIR holds mf-server, mfctl)
# Tunables (environment): MF_BENCH_CONNS (8), MF_BENCH_WRK_THREADS (2), MF_BENCH_DEVICES (16),
# MF_BENCH_SERVER_THREADS (4), MF_BATCH (64).
set -euo pipefail
BIN=$(cd "$1" && pwd)
secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
conns=${MF_BENCH_CONNS:-8}
wrk_threads=${MF_BENCH_WRK_THREADS:-2}
devices=${MF_BENCH_DEVICES:-16}
srv_threads=${MF_BENCH_SERVER_THREADS:-4}
export MF_BATCH=${MF_BATCH:-64}
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

command -v wrk >/dev/null || { echo "run.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d /tmp/mf-bench-offload.XXXXXX)
trap 'mf_stack_stop; rm -rf "$work"' EXIT
export MF_SERVE_ARGS="--threads $srv_threads --log-level warn --device-rate 1000000 \
--device-burst 1000000 --conn-limit 1024"
mf_stack_start "$work/server" "$work/server.log"
: >"$work/creds"
for i in $(seq 1 "$devices"); do
    curl -s -X POST -H 'Content-Type: application/json' \
        --data "{\"enrollment_token\":\"$(cat "$MF_ENROLL_TOKEN_FILE")\",\"device_id\":\"dev-$i\"}" \
        "$MF_URL/v1/enroll" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])' >>"$work/creds"
done
export MF_CREDS=$work/creds
wrk -t"$wrk_threads" -c"$conns" -d"${secs}s" --latency -s "$here/batch.lua" \
    "$MF_URL/v1/offload/batch" >"$work/wrk.out" 2>&1 || {
    cat "$work/wrk.out" >&2
    exit 1
}
if grep -q 'Non-2xx\|batch.lua: status' "$work/wrk.out"; then
    cat "$work/wrk.out" >&2
    exit 1
fi
stored=$(mfctl_admin samples export --model digits --since 0 "$work/export" | awk '{print $2}')
# Every answered batch must have been stored: a repeated batch id would be answered 200 by
# idempotency without storing anything and inflate the figure.
answered=$(awk '/requests in/ { print $1 }' "$work/wrk.out")
if [ "$stored" -lt $((answered * MF_BATCH)) ]; then
    echo "run.sh: $answered batches answered but only $stored samples stored" >&2
    exit 1
fi
awk -v b="$MF_BATCH" -v secs="$secs" -v stored="$stored" -v conns="$conns" '
    /^Requests\/sec/ { rps = $2 }
    /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
    END {
        printf "batches of %d x 784 B, %d connections, %d s: %.0f batches/s = %.0f samples/s" \
               " (%.1f MiB/s of input); latency p50 %s p99 %s; %d samples stored\n",
               b, conns, secs, rps, rps * b, rps * b * 784 / 1048576, p50, p99, stored
    }' "$work/wrk.out"
