#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The way down on the real programs (docs/agent.md, "Runtime degradation"): mf-server on
# 127.0.0.1 (ephemeral port, SQLite) and an mf-sim fleet of real libmf agents of one class.
# det v1 is published with a "tiny" variant marked as its fallback (fallback=1, its own
# release signed offline); then
#   - every device installs v1 and, beside it, the tiny fallback (the bytes on disk);
#   - a simulated minute per cycle (mf-sim --cycle-ms): devices 0 and 1 are under memory
#     pressure from v1's minute 2 on (mf-sim --squeeze, fed to libmf's own degrade controller
#     through the port): they degrade (the fallback is what they load), devices 2 and 3 do
#     not; each switch reaches the server with its reason ("memory"), visible in the device
#     route and `mfctl devices show`;
#   - a second run (a restart: the state survives, the hold window of 3 simulated minutes
#     counts afresh) with no pressure restores them after the hold: "recovered" arrives, the
#     device is not degraded;
#   - a check-in with a bad switch report is refused with 400 and stores nothing.
# Usage: degrade.sh BIN_DIR   (ctest: integration_degrade)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-degrade
sim() { # sim CYCLES [mf-sim options...]: the fleet; its summary in $work/sim.out
    local cycles=$1
    shift
    "$BIN/mf-sim" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --state "$work/fleet" --model det --devices 4 \
        --cycles "$cycles" --interval-ms 150 --cycle-ms 60000 \
        --class 0-4:cam,ram=512,storage=64 "$@" >"$work/sim.out" 2>>"$work/sim.log"
}
# shows DEVICE REGEX [--json]: `mfctl devices show DEVICE` has a line matching REGEX
shows() { mfctl_admin devices show "$1" ${3:-} | grep -Eq "$2"; }
checkin_status() { # checkin_status DEVICE BODY: the status of a raw check-in
    curl -s -o "$work/checkin.out" -w '%{http_code}' -X POST --data "$2" \
        -H "Authorization: Bearer $(cat "$work/fleet/$1/credential")" \
        -H "Content-Type: application/json" "$MF_URL/v1/checkin"
}

mf_stack_start "$work/data" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" || exit 1
mf_make_model "$work/v1.bin" 300000 1 && mf_make_model "$work/tiny.bin" 60000 2 || exit 1
mf_publish det v1 "$work/v1.bin" --sequence 1 >/dev/null || exit 1
check "a variant flag that is not a boolean is refused (400)" \
    test "$(mf_put_variant det v1 tiny "$work/tiny.bin" 'rank=9&fallback=perhaps')" = 400
check "the tiny variant is staged as v1's fallback" \
    test "$(mf_put_variant det v1 tiny "$work/tiny.bin" 'rank=9&fallback=1')" = 201
check "its own signed release is attached" \
    test "$(mf_release_variant det v1 tiny "$work/tiny.bin" 1)" = 201

# Run 1: devices 0-1 squeezed from v1's minute 2 to the end (v1 runs from cycle 1).
sim 6 --squeeze 0-2:mem=2-100,hold=180000
check "the fleet runs v1" grep -q '^version v1 devices 4$' "$work/sim.out"
check "the fallback is installed beside the active slot on every device" \
    cmp -s "$work/tiny.bin" "$work/fleet/sim-00003/models/det/fallback"
check "the two squeezed devices degraded" grep -q '^degraded devices 2$' "$work/sim.out"
check "the server lists the switch of sim-00000 with its reason" \
    shows sim-00000 '^1 +[^ ]+ +[^ ]+ +degrade +memory$'
check "and says it is degraded" shows sim-00000 '^DEGRADED  yes$'
check "an unsqueezed device reported no switch" shows sim-00002 '"switches":\[\]' --json

# Run 2, a restart without pressure (a squeeze of the hold window only): back after it.
sim 8 --squeeze 0-2:hold=180000
check "after the restart every device runs its active variant again" \
    grep -q '^degraded devices 0$' "$work/sim.out"
check "the restore arrived with its reason" \
    shows sim-00001 '^2 +[^ ]+ +[^ ]+ +restore +recovered$'
check "the device route says it is no longer degraded" shows sim-00001 '"degraded":false' --json

# A bad switch report: 400, nothing stored.
mfctl_admin devices show sim-00001 --json | sed 's/"last_seen":[0-9]*//' >"$work/before.json"
bad='{"nonce":"0123456789abcdef0123456789abcdef","root_version":1,"keys_version":1,'
bad+='"degrade":{"degraded":true,"reason":"memory","switches":[{"seq":7,"at":0,'
bad+='"degraded":true,"reason":"sunspots"}]},"models":[{"name":"det","version":null,"sha256":null}]}'
check "a bad switch report is refused with 400" test "$(checkin_status sim-00001 "$bad")" = 400
check "naming the bad reason" grep -q "'reason' must be one of" "$work/checkin.out"
mfctl_admin devices show sim-00001 --json | sed 's/"last_seen":[0-9]*//' >"$work/after.json"
check "and nothing of it is stored" cmp -s "$work/before.json" "$work/after.json"

echo "passed $MF_PASSED, failed $MF_FAILED"
[ "$MF_FAILED" -eq 0 ]
