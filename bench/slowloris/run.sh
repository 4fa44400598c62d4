#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slowloris against mf-server at its default connection settings, on loopback
# (bench/slowloris/README.md): ATTACKERS slow sockets (bench_slowloris: one byte a second,
# a header that never ends or, for a fifth of them, a body that trickles) from ADDRS
# addresses 127.0.0.2.. reconnect whenever the server closes them, while 64 devices check in
# from 127.0.0.1 with wrk (bench/server/checkin.lua) for SECONDS. Prints the check-ins'
# p99, non-2xx and socket errors, what the attacker saw and the server's
# mf_http_connections_closed_total by rule. Not a test.
# Usage: bench/slowloris/run.sh BIN_DIR [SECONDS] [ATTACKERS] [ADDRS]
#   BIN_DIR holds mf-server, mfctl and bench_slowloris (the attacker may come from another
#   build: MF_BENCH_ATTACKER=path). MF_BENCH_WARMUP (15): seconds of attack before the
#   devices start, so that the header deadline (30 s) falls inside their run.
set -euo pipefail
BIN=$(cd "$1" && pwd)
secs=${2:-20}
attackers=${3:-5000}
addrs=${4:-10}
warmup=${MF_BENCH_WARMUP:-15}
attacker=${MF_BENCH_ATTACKER:-$BIN/bench_slowloris}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

# Server and attacker each hold one descriptor per slow socket.
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge $((attackers + 1024)) ] ||
    { echo "open file limit $(ulimit -n) is below $((attackers + 1024))" >&2; exit 1; }
"$root/bench/server/install-deps.sh"
work=$(mktemp -d /tmp/mf-slowloris.XXXXXX)
attack_pid=""
cleanup() {
    [ -n "$attack_pid" ] && kill "$attack_pid" 2>/dev/null
    mf_stack_stop
    rm -rf "$work"
}
trap cleanup EXIT

# Connection settings stay at their defaults; only the per-device request rate is raised,
# as in bench/server (64 devices checking in as fast as wrk can are not a fleet's rate).
export MF_SERVE_ARGS="--log-level warn --delta-worker 0 --device-rate 1000000 --device-burst 1000000"
mf_stack_start "$work/data" "$work/server.log"
mf_make_model "$work/model.bin" 65536 bench
sha=$(sha256sum "$work/model.bin" | cut -c1-64)
mf_trust_setup "$work/keys" >/dev/null
mf_publish detector v1 "$work/model.bin" >/dev/null
for i in $(seq 1 64); do
    curl -s -X POST -H 'Content-Type: application/json' \
        --data "{\"enrollment_token\":\"$(cat "$MF_ENROLL_TOKEN_FILE")\",\"device_id\":\"dev-$i\"}" \
        "$MF_URL/v1/enroll" | python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])'
done >"$work/creds"

src=()
for i in $(seq 2 $((addrs + 1))); do src+=("127.0.0.$i"); done
port=${MF_URL##*:}
"$attacker" 127.0.0.1 "$port" "$attackers" $((warmup + secs + 5)) 1000 20 "${src[@]}" \
    >"$work/attack.out" &
attack_pid=$!
sleep "$warmup"
echo "bench: $(nproc) cores; $attackers slow sockets from $addrs addresses, ${warmup} s before" \
    "and during wrk -t2 -c64 -d${secs}s of check-ins from 127.0.0.1"
MF_CREDS="$work/creds" MF_MODEL=detector MF_VERSION=v1 MF_SHA256=$sha \
    wrk -t2 -c64 -d"${secs}s" --timeout 10s --latency -s "$root/bench/server/checkin.lua" \
    "$MF_URL" >"$work/wrk.out" 2>&1 || true
# The server's counts (curl from 127.0.0.1, like the devices; empty on a build without them).
curl -s -m 10 -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" "$MF_URL/metrics" \
    >"$work/metrics" || true
wait "$attack_pid" || true
attack_pid=""

p99=$(awk '$1 == "99%" { print $2 }' "$work/wrk.out")
rps=$(awk '/^Requests\/sec/ { print $2 }' "$work/wrk.out")
reqs=$(awk '/requests in/ { print $1 }' "$work/wrk.out")
non2xx=$(awk '/Non-2xx/ { print $NF }' "$work/wrk.out")
sockerr=$(sed -n 's/.*Socket errors: //p' "$work/wrk.out")
echo "check-ins: ${reqs:-0} in ${secs} s (${rps:-0}/s), p99 ${p99:-n/a}, non-2xx ${non2xx:-0}," \
    "socket errors: ${sockerr:-none}"
cat "$work/attack.out"
grep '^mf_http_connections_closed_total' "$work/metrics" || echo "server: no connection rule counters"
grep -c 'conns' "$work/server.log" | sed 's/^/server log lines from the connection rules: /'
grep 'conns' "$work/server.log" | head -n 6
