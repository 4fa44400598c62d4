#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rollout benchmark (not a test): mf-sim drives DEVICES real libmf agents through a
# three-wave rollout (10 %, 50 %, 100 %; soak 2 s; red line p99 <= 1.5 x v1) against one
# mf-server node, on SQLite and on PostgreSQL (a private durable cluster, tests/pg/). v2 has
# 2x the P99, so the rollout halts in wave 0 and the fleet rolls back to v1. Reported per
# store: report check-ins per second and their p50/p99 round trip as mf-sim measured them,
# and the time from the breach (the halted event, 1 s resolution) to the cycle after which
# no device runs v2 any more.
# Usage: bench/rollout/run.sh BIN_DIR [DEVICES]   (BIN_DIR holds mf-server, mfctl, mf-sim,
# mf_pg_seed; default 200 devices, see README.md for why not 10,000)
set -uo pipefail
BIN=${1:?usage: run.sh BIN_DIR [DEVICES]}
devices=${2:-200}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
work=$(mktemp -d /tmp/mf-benchro.XXXXXX)
cleanup() {
    mf_stack_stop
    bash "$root/tests/pg/stop.sh" "$work/pg" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
# Each device keeps its agent's and its reporter's connection open: two descriptors each.
need=$((devices * 3 + 256))
cur=$(ulimit -n)
if [ "$cur" != unlimited ] && [ "$cur" -lt "$need" ]; then
    ulimit -n "$need" || echo "warning: only $cur file descriptors" >&2
fi
export MF_SERVE_ARGS="--log-level warn --device-rate 1000000 --device-burst 1000000 \
--conn-limit $((devices * 2 + 64))"

sim() { # sim LABEL CYCLES [options]
    local label=$1 cycles=$2
    shift 2
    "$BIN/mf-sim" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --state "$work/$label-fleet" --model det \
        --devices "$devices" --cycles "$cycles" --interval-ms 0 --inferences 20 \
        --behave v1:lat=1000,mem=40M,offload=5 "$@" 2>>"$work/$label-sim.log"
}

bench_store() { # bench_store LABEL
    local label=$1 t0 t_halt t_clear
    mf_stack_start "$work/$label" "$work/$label-server.log" || return 1
    mf_trust_setup "$work/$label-keys" >/dev/null || return 1
    mf_make_model "$work/v1.bin" 20000 1
    mf_make_model "$work/v2.bin" 20000 2
    mf_publish det v1 "$work/v1.bin" >/dev/null
    t0=$(date +%s.%N)
    sim "$label" 2 >"$work/$label-install.out" || return 1
    echo "$label: $devices devices enrolled and on v1 in $(echo "$(date +%s.%N) - $t0" | bc) s"
    grep '^report' "$work/$label-install.out" | sed "s/^/$label: install run: /"
    mf_publish det v2 "$work/v2.bin" >/dev/null
    cat >"$work/plan.json" <<'JSON'
{"soak_s": 2, "min_devices": 5,
 "waves": [{"percent": 10}, {"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "p99_latency_us", "relative": 1.5}]}
JSON
    mfctl_admin rollout create det v2 "$work/plan.json" >/dev/null || return 1
    sim "$label" 12 --behave v2:lat=2000,mem=40M,offload=5 >"$work/$label-rollout.out"
    grep '^report\|^version\|^failed' "$work/$label-rollout.out" | sed "s/^/$label: rollout run: /"
    mfctl_admin rollout status 1 >"$work/$label-status.txt"
    grep '^rollout\|halted by' "$work/$label-status.txt" | sed "s/^/$label: /"
    t_halt=$(mfctl_admin rollout status 1 --json | python3 -c \
        'import json,sys; print([e["at"] for e in json.load(sys.stdin)["events"] if e["kind"]=="halted"][0])')
    # The first cycle after the breach that ends with no device on v2.
    t_clear=$(awk -v h="$t_halt" '$1 == "cycle" && $4 / 1000 >= h && $6 == 0 { print $4; exit }' \
        "$work/$label-rollout.out")
    if [ -n "$t_halt" ] && [ -n "$t_clear" ]; then
        echo "$label: breach to whole wave rolled back: $(echo "scale=1; $t_clear / 1000 - $t_halt" | bc) s (+-1 s)"
    else
        echo "$label: the wave was not rolled back within the run"
    fi
    mf_stack_stop
}

echo "devices: $devices, one mf-server node, $(nproc) cores"
bench_store sqlite
MF_PG_DURABLE=1 bash "$root/tests/pg/start.sh" "$work/pg" >/dev/null || exit 1
pg_base=$(cat "$work/pg/url")
psql -q "$pg_base" -c "CREATE DATABASE mfbenchro" >/dev/null
MF_TEST_STORE_URL=$(printf '%s' "$pg_base" | sed -E 's#^(postgres(ql)?://[^/?]*)/[^?]*#\1/mfbenchro#')
export MF_TEST_STORE_URL
bench_store pg
