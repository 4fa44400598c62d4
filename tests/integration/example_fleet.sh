#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The example fleet on the real programs (docs/example-model.md, "The example fleet"):
# mf-server on 127.0.0.1 (ephemeral port, SQLite) with the builtin teacher for model
# "digits"; a teacher and students trained in seconds on scikit-learn's digits
# (example_fleet_models); v1 published as a signed release with its calibration scores
# (target offload rate 20 %, audit 5 %). mf-example-fleet runs 4 devices (real libmf agents
# with offload handles) for 2 passes of 50 images of the held-out slice, then:
#   - every device installed v1 and the stats file's counters add up (images, offload rate
#     near the target, the cascade not worse than the student);
#   - the server holds every hard and audit sample; mf-example-sample-check finds their true
#     labels and the teacher's accuracy on the hard ones is above 80 %;
#   - a broken v2 is refused by every device (they stay on v1);
#   - v3 (the student trained a little more) arrives as a delta;
#   - v3's fallback variant "lite" (a lighter 64-8-10 student, fallback=1, its own signed
#     release) is kept by every device beside v3; squeezed (memory pressure on 2 devices in
#     pass 1 of 3), libmf's controller degrades those two to it and restores them once the
#     pressure ends, each switch reported to the server; the stats hold the switches, the
#     variant and its accuracy beside v3's over the degraded images.
# Usage: example_fleet.sh BIN_DIR MODELS_PROGRAM   (ctest: integration_example_fleet)
set -uo pipefail
BIN=$1
MODELS=$2
DIGITS=${MF_DIGITS_CSV:-/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

if [ ! -r "$DIGITS" ] || ! command -v python3 >/dev/null; then
    mf_skip "$DIGITS (python3-sklearn) not installed" || exit 1
    exit 0
fi
mf_stack_scratch mf-exfleet
devices=4
per_pass=50
stream=1300:1797 # items 0..999 trained the student, 1000..1299 calibrated it (teacher: 0..1299)

check "models trained (teacher, two students, calibration scores)" \
    bash -c "'$MODELS' '$DIGITS' '$work' 1000 1300 >'$work/models.txt'"
cat "$work/models.txt"
cat >"$work/offload.json" <<JSON
{"models": {"digits": {
  "teacher": {"connector": "builtin", "path": "$work/teacher.safetensors", "version": "t-1",
              "timeout_ms": 5000},
  "policy": {"enabled": true, "method": "max_softmax", "mode": "sync", "target_rate": 0.2,
             "audit_fraction": 0.05, "deadline_ms": 5000, "metered": "allow"}}}}
JSON
# The fleet compresses hours of a device's traffic into seconds: no per-device rate limit.
MF_SERVE_ARGS="--offload-config $work/offload.json --device-rate 0" mf_stack_start "$work/server" \
    "$work/server.log" || exit 1
check "trust installed" mf_trust_setup "$work/keys"
check "v1 published (signed release)" mf_publish digits v1 "$work/student-1.safetensors"
check "v1's calibration scores uploaded" bash -c "curl -sf -o /dev/null -X PUT \
    -H 'Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")' --data-binary @'$work/calibration.json' \
    '$MF_URL/v1/admin/offload/calibration/digits/v1'"

fleet() { # fleet PASSES: run the fleet; summary lines in $work/fleet.out, stats in stats.json
# (counted from the start of this run)
    "$BIN/mf-example-fleet" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --dir "$work/fleet" --devices "$devices" --model digits \
        --digits "$DIGITS" --range "$stream" --per-pass "$per_pass" --passes "$1" \
        --threads 2 --seed 7 --stats "$work/stats.json" >"$work/fleet.out" 2>>"$work/fleet.log"
}
# stats PYTHON_EXPR: evaluates EXPR with v = {version: counters} and s = the whole document.
stats() {
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); v = {x["version"]: x for x in s["versions"]}
ok = eval(sys.argv[2])
print(ok if not isinstance(ok, bool) else "", end="")
sys.exit(0 if ok else 1)' "$work/stats.json" "$1" >/dev/null
}
check "the fleet runs 2 passes" fleet 2
cat "$work/fleet.out"
check "  ... stats of pass 2, finished" stats 's["pass"] == 2 and s["finished"]'
check "every device installed v1" stats "v['v1']['devices'] == $devices"
for i in 0 1 2 3; do
    check "  ... fleet-0000$i runs v1" \
        grep -q '"version":"v1"' "$work/fleet/fleet-0000$i/models/digits/state.json"
done
# A first install is the raw blob, or the compressed full blob (a delta from the empty image)
# once the delta worker has made it: either way once per device, and never more bytes.
size1=$(stat -c %s "$work/student-1.safetensors")
check "  ... each once, raw or compressed (fewer bytes)" stats \
    "v['v1']['installs_full'] + v['v1']['installs_delta'] == $devices and \
    v['v1']['bytes_full'] == v['v1']['installs_full'] * $size1 and \
    v['v1']['bytes_delta'] < v['v1']['installs_delta'] * $size1 + 1"
check "images == devices x per-pass x passes" stats "v['v1']['images'] == $devices * $per_pass * 2"
check "no image skipped (the policy came with the install)" stats 's["skipped"] == 0'
check "by_teacher > 0" stats "v['v1']['by_teacher'] > 0"
check "  ... hard share near the 20 % target (8-40 %)" \
    stats "0.08 <= v['v1']['hard'] / v['v1']['images'] <= 0.40"
check "  ... every hard sample answered by the teacher (no fallback)" \
    stats "v['v1']['by_teacher'] == v['v1']['hard'] and not v['v1']['fallbacks']"
check "audit samples queued (5 % of the confident)" \
    stats "0 < v['v1']['audit'] <= 0.15 * v['v1']['images'] and v['v1']['queued'] >= v['v1']['audit']"
check "cascade_correct >= student_correct - 2" \
    stats "v['v1']['cascade_correct'] >= v['v1']['student_correct'] - 2"
check "student accuracy is a digits student's (>= 80 %)" \
    stats "v['v1']['student_correct'] >= 0.8 * v['v1']['images']"
# The runtime reports rode the check-ins: what pass 1 measured went up with pass 2's.
check "versions stats: v1 reported by every device, offload rate and teacher agreement" \
    bash -c "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' versions stats \
        digits --json | python3 -c 'import json, sys
v = json.load(sys.stdin)[\"versions\"][0]
sys.exit(0 if v[\"version\"] == \"v1\" and v[\"devices_reporting\"] == $devices and
         0.08 <= v[\"offload_rate\"] <= 0.4 and 0.5 <= v[\"teacher_agreement\"] < 1 and
         v[\"peak_memory\"] > 0 else 1)'"

# Every sample on the server, labelled (sync asks at once, audit samples by the label job).
hard=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["versions"][0]["hard"])' \
    "$work/stats.json")
audit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["versions"][0]["audit"])' \
    "$work/stats.json")
exported() { # exported KIND: the export of KIND holds as many labelled samples as the fleet sent
    local want=$hard
    [ "$1" = audit ] && want=$audit
    mfctl_admin samples export --model digits --kind "$1" --min-teacher-confidence 0 \
        "$work/export-$1" >/dev/null 2>&1 &&
        [ "$(wc -l <"$work/export-$1/samples.jsonl")" -eq "$want" ]
}
for _ in $(seq 1 150); do # bounded: 15 s for the label job (every 2 s)
    exported hard && exported audit && break
    sleep 0.1
done
check "the server holds the $hard hard samples, labelled" exported hard
check "  ... and the $audit audit samples" exported audit
check "mf-example-sample-check on the hard samples" bash -c "'$BIN/mf-example-sample-check' \
    '$work/export-hard' --digits '$DIGITS' >'$work/check-hard.json'"
cat "$work/check-hard.json"
sample_check() { # sample_check FILE EXPR: EXPR over g = the first group, t = the document
    python3 -c 'import json, sys
t = json.load(open(sys.argv[1])); g = t["groups"][0]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
check "  ... every sample matched to its true label" sample_check "$work/check-hard.json" \
    "g['kind'] == 'hard' and g['model_version'] == 'v1' and g['count'] == g['matched'] == $hard \
     and t['unmatched'] == 0"
check "  ... teacher accuracy on the hard samples > 80 %" \
    sample_check "$work/check-hard.json" "g['labelled'] == $hard and g['teacher_accuracy'] > 0.8"
check "  ... the student is worse than the teacher on them" sample_check "$work/check-hard.json" \
    "g['student_accuracy'] < g['teacher_accuracy']"
check "mf-example-sample-check on the audit samples" bash -c "'$BIN/mf-example-sample-check' \
    '$work/export-audit' --digits '$DIGITS' >'$work/check-audit.json'"
check "  ... matched and labelled" sample_check "$work/check-audit.json" \
    "g['kind'] == 'audit' and g['matched'] == g['labelled'] == $audit"
check "sample-check without a dataset is a usage error (2)" \
    bash -c "'$BIN/mf-example-sample-check' '$work/export-audit' >/dev/null 2>&1; test \$? -eq 2"

# A broken file is refused by the app: the agent reverts, the device stays on v1.
head -c 3000 /dev/urandom >"$work/broken.safetensors"
check "v2 (not a student file) published" mf_deploy digits v2 "$work/broken.safetensors"
check "the fleet runs a pass" fleet 1
check "  ... every device refused v2" stats "v['v2']['rejected'] == $devices and \
    v['v2']['images'] == 0"
check "  ... and still runs v1" stats "v['v1']['devices'] == $devices and v['v2']['devices'] == 0"
check "  ... classifying with it (counters start with each run)" \
    stats "v['v1']['images'] == $devices * $per_pass"
check "  ... the server saw the rollbacks" bash -c "'$BIN/mfctl' --server '$MF_URL' \
    --token-file '$MF_ADMIN_TOKEN_FILE' devices | grep -c 'rolled back' | grep -qx $devices"

# The next version by delta: the server precomputes it from what the fleet runs.
check "v3 (the student trained a little more) published" \
    mf_deploy digits v3 "$work/student-2.safetensors"
mf_wait_jobs 180 || echo "delta jobs still busy after 180 s"
check "the fleet runs a pass" fleet 1
check "  ... every device on v3" stats "v['v3']['devices'] == $devices"
check "  ... installed from a delta" stats "v['v3']['installs_delta'] == $devices and \
    v['v3']['installs_full'] == 0"
check "  ... smaller than the full file" stats "0 < v['v3']['bytes_delta'] < \
    $devices * $(stat -c %s "$work/student-2.safetensors")"

# The way down: v3's lighter student as its fallback variant, with its own signed release.
seq3=$(curl -sf -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" "$MF_URL/v1/admin/models" |
    python3 -c 'import json, sys
print([v["sequence"] for m in json.load(sys.stdin)["models"] if m["name"] == "digits"
       for v in m["versions"] if v["version"] == "v3"][0])')
check "v3's lighter student staged as its fallback variant" \
    test "$(mf_put_variant digits v3 lite "$work/student-lite.safetensors" 'rank=9&fallback=1')" = 201
check "  ... with its own signed release (v3's sequence, ${seq3:-?})" \
    test "$(mf_release_variant digits v3 lite "$work/student-lite.safetensors" "${seq3:-0}")" = 201
# Devices 0 and 1 under memory pressure in pass 1 (a simulated minute a pass, the controllers'
# hold window is one): libmf degrades them to the fallback variant, and restores them.
fleet_squeezed() {
    "$BIN/mf-example-fleet" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --dir "$work/fleet" --devices "$devices" --model digits \
        --digits "$DIGITS" --range "$stream" --per-pass "$per_pass" --passes 3 \
        --threads 2 --seed 7 --stats "$work/stats.json" --squeeze 0-2:1-2 \
        >"$work/fleet.out" 2>>"$work/fleet.log"
}
check "squeezed: the fleet runs 3 passes, devices 0-1 under pressure in pass 1" fleet_squeezed
cat "$work/fleet.out"
for i in 0 1 2 3; do
    check "  ... fleet-0000$i keeps the lite fallback beside v3" \
        cmp -s "$work/student-lite.safetensors" "$work/fleet/fleet-0000$i/models/digits/fallback"
done
check "  ... both degraded once and restored once" \
    stats "v['v3']['degrades'] == 2 and v['v3']['restores'] == 2"
check "  ... the fallback classified their pass-1 images, nobody else's" \
    stats "v['v3']['degraded'] == 2 * $per_pass and v['v3']['images'] == $devices * $per_pass * 3"
check "  ... the fallback that ran is the variant lite" stats "v['v3']['fallback_variant'] == 'lite'"
check "  ... its accuracy beside v3's on those images (both digits students)" \
    stats "v['v3']['degraded_fallback_accuracy'] >= 0.6 and v['v3']['degraded_main_accuracy'] >= 0.8"
check "  ... the table's line names the variant and the cost" grep -Eq \
    '^pass 3: v3 degrades 2 restores 2, degraded images 100: fallback lite [0-9.]+ % right where v3 would be [0-9.]+ %$' \
    "$work/fleet.out"
shows() { mfctl_admin devices show "$1" ${3:-} | grep -Eq "$2"; } # shows DEVICE REGEX [--json]
check "  ... the server holds fleet-00000's degrade with its reason" \
    shows fleet-00000 '^1 +[^ ]+ +[^ ]+ +degrade +memory$'
check "  ... and its restore" shows fleet-00000 '^2 +[^ ]+ +[^ ]+ +restore +recovered$'
check "  ... and says it is no longer degraded" shows fleet-00000 '"degraded":false' --json
check "  ... an unsqueezed device switched never" shows fleet-00002 '"switches":\[\]' --json
check "a bad --squeeze is a usage error (2)" bash -c "'$BIN/mf-example-fleet' --server x \
    --enroll-token-file x --trust-root x --dir x --devices 1 --model m --digits x --stats x \
    --squeeze 2-1:0-1 >/dev/null 2>&1; test \$? -eq 2"

# Until SIGTERM (--passes 0): stops after the device in progress, with a last stats file.
"$BIN/mf-example-fleet" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
    --trust-root "$MF_ROOT_FILE" --dir "$work/fleet" --devices "$devices" --model digits \
    --digits "$DIGITS" --range "$stream" --per-pass 5 --passes 0 --stats "$work/run.json" \
    >/dev/null 2>>"$work/fleet.log" &
fleet_pid=$!
for _ in $(seq 1 100); do # bounded: 10 s for the first pass
    [ -s "$work/run.json" ] && break
    sleep 0.1
done
kill -TERM "$fleet_pid"
check "SIGTERM: the fleet exits 0" wait "$fleet_pid"
check "  ... with a last stats file, not finished" python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); sys.exit(0 if s["pass"] >= 1 and not s["finished"] else 1)' \
    "$work/run.json"

echo "example_fleet: $MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    echo "--- stats"; cat "$work/stats.json"
    echo "--- fleet log (tail)"; tail -20 "$work/fleet.log"
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    exit 1
fi
