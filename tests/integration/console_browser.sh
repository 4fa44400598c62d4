#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The web console in real Chromium (docs/console.md): mf-server on 127.0.0.1 (ephemeral port,
# SQLite) serving the console it was built with, a fleet of 20 mf-sim devices on v1, v2
# published and a three-wave rollout with red lines relative to v1; then ui/e2e/console.mjs
# (playwright-core driving Debian's chromium headless) signs in with each role and opens every
# view while this script runs the fleet with v2 at twice v1's latency, once the rollout's page
# is open: the rollout halts and the page must show it within 10 s, its red-line plots from the
# server's history; then one cycle with device classes for the Fleet view's classes and Model
# health per class. Screenshots of every view
# go to SHOT_DIR (ctest: <build>/test-artifacts/console).
# Usage: console_browser.sh BIN_DIR SHOT_DIR   (ctest: integration_console_browser)
set -uo pipefail
BIN=$1
shots=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-console
chromium=${MF_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ] || [ ! -d "$root/ui/node_modules/playwright-core" ]; then
    mf_skip "no $chromium or ui/node_modules (scripts/install-deps, then the build's npm ci)"
    echo "$MF_PASSED passed, $MF_FAILED failed"
    [ "$MF_FAILED" -eq 0 ]
    exit
fi
devices=20
sim() { # sim CYCLES [mf-sim options...]
    local cycles=$1
    shift
    "$BIN/mf-sim" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --state "$work/fleet" --model det --devices "$devices" \
        --cycles "$cycles" --interval-ms 250 --behave v1:lat=1000,mem=40M,offload=5 \
        "$@" >"$work/sim.out" 2>>"$work/sim.log"
}
halted() { mfctl_admin rollout status 1 --json | grep -q '"state":"halted"'; }
run_waited() { mfctl_admin distill wait "$1" 120 2>&1 | tee "$work/run$1.out" | grep -Eq "$2"; }
token() { mfctl_admin tokens create "$1" "console-$1" --json | sed -n 's/.*"token":"\([^"]*\)".*/\1/p'; }

# Offload configured for det (policy off: the fleet's check-ins stay as they are) so that a
# calibration set can be uploaded: Model health plots its confidence histogram. And a real
# learning loop for the Loop and Samples views: model "fashion" (Fashion-MNIST from Debian)
# with a builtin teacher trained here (small: seconds) and a distill config; run 1 makes the
# seed student d1, a device uplinks hard samples (images), run 2 trains on them.
FM=/usr/share/datasets/fashion-mnist
check "a small teacher for fashion trained" "$BIN/mf-train-teacher" \
    --train-images $FM/train-images-idx3-ubyte.gz --train-labels $FM/train-labels-idx1-ubyte.gz \
    --hidden 32 --epochs 1 --out "$work/teacher.safetensors"
cat >"$work/offload.json" <<JSON
{"models": {
 "det": {"teacher": {"connector": "command", "command": ["/bin/true"], "timeout_ms": 5000},
         "policy": {"enabled": false, "method": "max_softmax", "mode": "sync", "threshold": 0.5}},
 "fashion": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors",
                         "version": "t1"},
             "policy": {"enabled": true, "method": "max_softmax", "mode": "sync",
                        "target_rate": 0.1}}}}
JSON
cat >"$work/distill.json" <<JSON
{"models": {"fashion": {
 "data": {"train_images": "$FM/train-images-idx3-ubyte.gz",
          "train_labels": "$FM/train-labels-idx1-ubyte.gz",
          "heldout_images": "$FM/t10k-images-idx3-ubyte.gz",
          "heldout_labels": "$FM/t10k-labels-idx1-ubyte.gz",
          "heldout_range": [5000, 6000], "seed_fraction": 0.02, "calibration": 500},
 "trainer": {"epochs": 1, "warm_start": true},
 "release": {"key": "$work/keys/release.pem"},
 "rollout": {"soak_s": 1, "min_devices": 1, "waves": [{"percent": 100}],
             "red_lines": [{"metric": "p99_latency_us", "relative": 2.0}]}}}}
JSON
MF_SERVE_ARGS="--offload-config $work/offload.json --distill-config $work/distill.json --device-rate 1000" \
    mf_stack_start "$work/server" "$work/server.log" || exit 1
check "the console is served at /ui/" sh -c "curl -fsS '$MF_URL/ui/' | grep -q 'modelferry console'"
check "trust installed" mf_trust_setup "$work/keys"
mf_make_model "$work/v1.bin" 40000 1
# v2: v1 with its first 400 bytes new (a retrained head), so the server's delta pays off and
# the Models view lists it.
mf_make_model "$work/head.bin" 400 2
{ cat "$work/head.bin"; tail -c +401 "$work/v1.bin"; } >"$work/v2.bin"
check "v1 published" mf_publish det v1 "$work/v1.bin"
check "the fleet enrolls and installs v1" sim 3
check "v2 published" mf_publish det v2 "$work/v2.bin"
cat >"$work/plan.json" <<'JSON'
{"soak_s": 1, "min_devices": 2,
 "waves": [{"percent": 10}, {"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "p99_latency_us", "relative": 1.5},
               {"metric": "peak_memory", "relative": 1.2}]}
JSON
check "rollout of v2 created" mfctl_admin rollout create det v2 "$work/plan.json"
# The loop, after det's rollout (it stays rollout 1): two runs with uplinked samples between.
mfctl_admin distill run fashion >/dev/null
check "distill run 1 published the seed student d1" run_waited 1 "fashion published"
stored=$(python3 "$root/tests/integration/distill_uplink.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
    $FM/train-images-idx3-ubyte.gz cam-uplink 20000 60 d1)
check "60 uplinked samples stored" test "$stored" = 60
mfctl_admin distill run fashion >/dev/null
check "distill run 2 trained on them and ended published or rejected" \
    run_waited 2 "fashion (published|rejected)"
MF_TOKEN_OPS=$(token ops) MF_TOKEN_DATA=$(token data) MF_TOKEN_ADMIN=$(cat "$MF_ADMIN_TOKEN_FILE")
export MF_TOKEN_OPS MF_TOKEN_DATA MF_TOKEN_ADMIN MF_URL MF_CHROMIUM=$chromium
check "a calibration set of det v1 uploaded (data)" curl -fsS -o /dev/null -X PUT \
    -H "Authorization: Bearer $MF_TOKEN_DATA" -H 'Content-Type: application/json' \
    --data '{"method":"max_softmax","scores":[0.2,0.5,0.55,0.7,0.8,0.85,0.9,0.9,0.95,0.99]}' \
    "$MF_URL/v1/admin/offload/calibration/det/v1"
rm -rf "$shots"
MF_SHOTS=$shots MF_READY=$work/ready MF_CLASSES=$work/classes node "$root/ui/e2e/console.mjs" >"$work/browser.out" 2>&1 &
browser=$!
# The fleet runs once the rollout's page is open (bounded: 60 s for the browser to get there,
# then 4-cycle rounds of v2 at 2x latency until the rollout halts, 15 rounds at most).
for _ in $(seq 1 600); do
    [ -e "$work/ready" ] || ! kill -0 "$browser" 2>/dev/null && break
    sleep 0.1
done
ran=0
if [ -e "$work/ready" ]; then
    for _ in $(seq 1 15); do
        sim 4 --behave v2:lat=2000,mem=40M,offload=5 || break
        halted && ran=1 && break
    done
fi
check "the fleet halted the rollout while the page was open" test "$ran" -eq 1
# Then one cycle more with device classes (half cam-lite, half cam-pro: after the halt, so
# the classes do not split the evaluation the halt test watches): the Fleet view counts and
# filters them, Model health splits its scorecard by them.
check "the fleet reports with its device classes" sim 1 \
    --class 0-10:cam-lite,ram=256,storage=512 --class 10-20:cam-pro,ram=2048,storage=8192
touch "$work/classes"
wait "$browser"
status=$?
cat "$work/browser.out"
check "the browser tests pass" test "$status" -eq 0
check "a screenshot per view" test "$(find "$shots" -name '*.png' | wc -l)" -ge 20
echo "$MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    echo "--- mf-sim log (tail)"; tail -20 "$work/sim.log"
    exit 1
fi
