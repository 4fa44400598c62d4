#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End-to-end thin slice on loopback: the real mf-server, mfctl publishing, mf-agent
# installing. Usage: mf_agent_e2e.sh MF_SERVER MFCTL MF_AGENT  (ctest passes the binaries)
set -eu
SERVER=$1 MFCTL=$2 AGENT=$3
T=$(mktemp -d /tmp/mf-e2e-XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "e2e: FAIL: $*" >&2; exit 1; }

"$SERVER" init --data-dir "$T/srv" >/dev/null
"$SERVER" serve --data-dir "$T/srv" --listen 127.0.0.1:0 --port-file "$T/port" \
    --log-level warn 2>"$T/server.log" &
PID=$!
i=0
while [ ! -s "$T/port" ]; do
    i=$((i + 1)); [ $i -le 100 ] || fail "mf-server did not start"; sleep 0.1
done
URL="http://127.0.0.1:$(cat "$T/port")"
export MF_SERVER="$URL" MF_TOKEN_FILE="$T/srv/admin.token"

head -c 300000 /dev/urandom >"$T/v1.bin"
head -c 200000 /dev/urandom >"$T/v2.bin"
"$MFCTL" publish detector v1 "$T/v1.bin" | grep -q "published detector v1" || fail "publish v1"

cat >"$T/agent.json" <<CFG
{"server_url": "$URL", "device_id": "cam-e2e", "state_dir": "$T/dev",
 "enrollment_token_file": "$T/srv/enroll.token", "models": ["detector", "classifier"],
 "poll_interval_s": 1, "log_level": "warn"}
CFG
"$AGENT" --config "$T/agent.json" run --once || fail "first install"
cmp "$T/v1.bin" "$T/dev/models/detector/slot-a" || fail "v1 bytes differ"
"$MFCTL" devices | grep "cam-e2e" | grep "detector" | grep -q "installed" || fail "devices v1"

"$MFCTL" publish detector v2 "$T/v2.bin" >/dev/null || fail "publish v2"
"$AGENT" --config "$T/agent.json" run --once || fail "second install"
cmp "$T/v2.bin" "$T/dev/models/detector/slot-b" || fail "v2 bytes differ"
cmp "$T/v1.bin" "$T/dev/models/detector/slot-a" || fail "v1 not kept for rollback"
"$AGENT" --config "$T/agent.json" status | grep detector | grep -q "v2 .*slot b" || fail "status"
"$AGENT" --config "$T/agent.json" run --once || fail "no-op step"
"$MFCTL" devices --json | grep -q '"version":"v2"' || fail "devices v2"
"$MFCTL" models | grep -c detector | grep -q 2 || fail "models table"
# Identical bytes under the same version are accepted again; different bytes are refused.
"$MFCTL" publish detector v2 "$T/v2.bin" >/dev/null || fail "idempotent publish"
if "$MFCTL" publish detector v2 "$T/v1.bin" 2>"$T/err"; then fail "conflict accepted"; fi
grep -q "409" "$T/err" || fail "conflict message"
# The daemon: --max-cycles bounds it; SIGTERM ends the (server-set, 60 s) sleep at once.
"$AGENT" --config "$T/agent.json" run --max-cycles 1 || fail "max-cycles"
"$AGENT" --config "$T/agent.json" run 2>"$T/agent.log" &
APID=$!
sleep 1.5
kill -TERM "$APID"
wait "$APID" || fail "daemon exit status after SIGTERM"
grep -q "stopping after" "$T/agent.log" || fail "no clean stop"
echo "e2e: ok"
