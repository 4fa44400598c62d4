#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rollout benchmark (not a test): mf-sim drives DEVICES real libmf agents through a
# three-wave rollout (10 %, 50 %, 100 %; soak 2 s; red line p99 <= 1.5 x v1) against one
# mf-server node, on SQLite and on PostgreSQL (a private durable cluster, tests/pg/). v2 has
# 2x the P99, so the rollout halts in wave 0 and the fleet rolls back to v1. Reported per
# store, for the install run and the rollout run:
#   - device steps per second the simulator sustained (each step is one check-in carrying
#     the device's runtime report, plus an install when one is assigned);
#   - check-in latency on the server (p50/p99 of the `ms=` of its POST /v1/checkin log
#     lines: request in to reply sent) and as the device saw it (p50/p99 of steps that
#     downloaded nothing: round trip plus verifying the signed answer and saving the trust
#     state);
#   - breach to rolled back: from the halted event (1 s resolution) to the moment the last
#     device running v2 was back on v1 (mf-sim's "none on v2 at MS" line).
# MF_BENCH_SCENARIO=class instead declares two device classes (the first half of the fleet
# cam-lite, low RAM; the rest cam-pro, an accelerator) and gives v2 twice v1's latency on
# cam-lite only (the variant that class runs): that class alone is halted and goes back to
# v1 while cam-pro advances through the waves; a per-class table gives, for each class, its
# devices, when it was halted, when its last device left v2, and where its devices ended.
# Usage: bench/rollout/run.sh BIN_DIR [DEVICES]   (BIN_DIR holds mf-server, mfctl, mf-sim;
# default 10000 devices). Environment: MF_SIM_THREADS (4), MF_BENCH_STORES ("sqlite pg"),
# MF_BENCH_ROLLOUT_CYCLES (4: install, report, halt seen, back on v1; 6 for class),
# MF_BENCH_SCENARIO (fleet, or class).
set -uo pipefail
BIN=${1:?usage: run.sh BIN_DIR [DEVICES]}
devices=${2:-10000}
threads=${MF_SIM_THREADS:-4}
stores=${MF_BENCH_STORES:-sqlite pg}
scenario=${MF_BENCH_SCENARIO:-fleet}
case $scenario in
fleet)
    rollout_cycles=${MF_BENCH_ROLLOUT_CYCLES:-4}
    classes=()
    v2=(--behave "v2:lat=2000,mem=40M,offload=5")
    ;;
class)
    rollout_cycles=${MF_BENCH_ROLLOUT_CYCLES:-6}
    half=$((devices / 2))
    classes=(--class "0-$half:cam-lite,ram=256,storage=512,int8"
        --class "$half-$devices:cam-pro,ram=2048,storage=8192,accel=npu,int8,fp16")
    v2=(--behave "v2:lat=1000,mem=40M,offload=5" --behave "v2@cam-lite:lat=2000,mem=40M,offload=5")
    ;;
*)
    echo "MF_BENCH_SCENARIO: fleet or class, not $scenario" >&2
    exit 2
    ;;
esac
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
# mf-sim holds one descriptor per device (its state directory) and one connection per
# thread; mf-server raises its own soft limit to the hard one.
need=$((devices + 512))
cur=$(ulimit -n)
if [ "$cur" != unlimited ] && [ "$cur" -lt "$need" ]; then
    ulimit -Sn "$need" || echo "warning: only $cur file descriptors" >&2
fi
# info: one line per request, whose ms= is the server-side check-in latency.
export MF_SERVE_ARGS="--log-level info --device-rate 1000000 --device-burst 1000000"

sim() { # sim LABEL CYCLES [options]
    local label=$1 cycles=$2
    shift 2
    "$BIN/mf-sim" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --state "$work/$label-fleet" --model det \
        --devices "$devices" --cycles "$cycles" --interval-ms 0 --inferences 20 \
        --threads "$threads" --behave v1:lat=1000,mem=40M,offload=5 "${classes[@]}" "$@" \
        2>>"$work/$label-sim.log"
}

# server_latency LOG FROM_LINE: p50/p99 and count of the check-ins logged after FROM_LINE.
server_latency() {
    tail -n "+$(($2 + 1))" "$1" | grep 'path=/v1/checkin status=200' |
        sed -n 's/.* ms=\([0-9.]*\).*/\1/p' | sort -g |
        awk '{v[NR] = $1} END { if (NR) printf "server check-ins %d: p50 %.1f ms p99 %.1f ms max %.1f ms\n",
            NR, v[int((NR - 1) * 0.5) + 1], v[int((NR - 1) * 0.99) + 1], v[NR] }'
}

# class_table LABEL: per class, its devices, when it was halted (s after the first v2
# reports began, from the class_halted event), when its last device left v2 (mf-sim's
# class-cycle lines: cycle resolution) and the versions its devices ended on.
class_table() {
    local label=$1 out=$work/$1-rollout.out json=$work/$1-status.json
    mfctl_admin rollout status 1 --json >"$json"
    python3 - "$out" "$json" "$label" <<'PY'
import json, sys
out, status, label = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
lines = [l.split() for l in open(out)]
start = next(int(l[3]) / 1000 for l in lines if l[0] == "cycle" and l[1] == "0")
halted = {}
for e in status["events"]:
    if e["kind"] == "class_halted":
        tag = e.get("detail", "").split()[1] if e.get("detail", "").startswith("class ") else "?"
        halted[tag] = max(0.0, e["at"] - start)  # "at" has 1 s resolution
    if e["kind"] in ("advanced", "done", "halted"):
        print(f"{label}: fleet {e['kind']} at +{max(0.0, e['at'] - start):.0f} s (1 s resolution)")
ended, peak, left = {}, {}, {}
for l in lines:
    if l[0] == "class" and l[2] == "version":
        ended.setdefault(l[1], []).append(f"{l[3]} {l[5]}")
    if l[0] == "class-cycle":
        tag, on, at = l[4], int(l[6]), int(l[3]) / 1000 - start
        peak[tag] = max(peak.get(tag, 0), on)
        if on == 0 and peak[tag] > 0 and tag not in left:
            left[tag] = (int(l[1]), at)
        if on > 0:
            left.pop(tag, None)
print(f"{label}: {'class':10} {'devices':>7} {'peak on v2':>10} {'halted at':>10} {'off v2 at':>16}  ended on")
for tag in ended:
    n = sum(int(x.split()[1]) for x in ended[tag])
    h = f"+{halted[tag]:.0f} s" if tag in halted else "never"
    off = f"+{left[tag][1]:.0f} s (cycle {left[tag][0]})" if tag in left else "-"
    print(f"{label}: {tag:10} {n:7} {peak.get(tag, 0):10} {h:>10} {off:>16}  {', '.join(ended[tag])}")
PY
}

bench_store() { # bench_store LABEL
    local label=$1 t0 t_halt t_clear mark log=$work/$1-server.log
    mf_stack_start "$work/$label" "$log" || return 1
    grep 'open file limit\|up to' "$log" | sed "s/^/$label: server: /"
    mf_trust_setup "$work/$label-keys" >/dev/null || return 1
    mf_make_model "$work/v1.bin" 20000 1
    mf_make_model "$work/v2.bin" 20000 2
    mf_publish det v1 "$work/v1.bin" >/dev/null
    t0=$(date +%s.%N)
    mark=$(wc -l <"$log")
    sim "$label" 2 >"$work/$label-install.out" || return 1
    echo "$label: $devices devices enrolled and on v1 in $(echo "$(date +%s.%N) - $t0" | bc) s"
    grep '^device steps\|^check-in steps\|^failed' "$work/$label-install.out" |
        sed "s/^/$label: install run: /"
    server_latency "$log" "$mark" | sed "s/^/$label: install run: /"
    mf_publish det v2 "$work/v2.bin" >/dev/null
    cat >"$work/plan.json" <<'JSON'
{"soak_s": 2, "min_devices": 5,
 "waves": [{"percent": 10}, {"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "p99_latency_us", "relative": 1.5}]}
JSON
    mfctl_admin rollout create det v2 "$work/plan.json" >/dev/null || return 1
    mark=$(wc -l <"$log")
    sim "$label" "$rollout_cycles" "${v2[@]}" >"$work/$label-rollout.out"
    grep '^device steps\|^check-in steps\|^version\|^class \|^failed\|^cycle' \
        "$work/$label-rollout.out" | sed "s/^/$label: rollout run: /"
    server_latency "$log" "$mark" | sed "s/^/$label: rollout run: /"
    mfctl_admin rollout status 1 >"$work/$label-status.txt"
    grep '^rollout\|^state\|halted by\|^classes halted' "$work/$label-status.txt" |
        sed "s/^/$label: /"
    if [ "$scenario" = class ]; then
        class_table "$label"
        mf_stack_stop
        return 0
    fi
    t_halt=$(mfctl_admin rollout status 1 --json | python3 -c \
        'import json,sys; print([e["at"] for e in json.load(sys.stdin)["events"] if e["kind"]=="halted"][0])')
    # The moment after the breach at which the last device running v2 was back on v1.
    t_clear=$(awk -v h="$t_halt" '$1 == "none" && $5 / 1000 >= h { print $5; exit }' \
        "$work/$label-rollout.out")
    # Detection: devices first report v2 in cycle 1, which starts when cycle 0 ends.
    awk -v h="$t_halt" '$1 == "cycle" && $2 == 0 { printf "halted %.1f s after the first v2 reports began (+-1 s)\n", h - $4 / 1000 }' \
        "$work/$label-rollout.out" | sed "s/^/$label: /"
    if [ -n "$t_halt" ] && [ -n "$t_clear" ]; then
        echo "$label: breach to whole wave rolled back: $(echo "scale=1; $t_clear / 1000 - $t_halt" | bc) s (+-1 s)"
    else
        echo "$label: the wave was not rolled back within the run"
    fi
    sort "$work/$label-sim.log" | sed 's/sim-[0-9]*/sim-N/' | uniq -c | sort -rn | head -3 |
        sed "s/^/$label: sim errors: /"
    mf_stack_stop
}

echo "devices: $devices, one mf-server node, $(nproc) cores, mf-sim threads: $threads"
for store in $stores; do
    case $store in
    sqlite)
        unset MF_TEST_STORE_URL
        bench_store sqlite
        ;;
    pg)
        MF_PG_DURABLE=1 bash "$root/tests/pg/start.sh" "$work/pg" >/dev/null || exit 1
        pg_base=$(cat "$work/pg/url")
        psql -q "$pg_base" -c "CREATE DATABASE mfbenchro" >/dev/null
        MF_TEST_STORE_URL=$(printf '%s' "$pg_base" |
            sed -E 's#^(postgres(ql)?://[^/?]*)/[^?]*#\1/mfbenchro#')
        export MF_TEST_STORE_URL
        bench_store pg
        ;;
    esac
done
