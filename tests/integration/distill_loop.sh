#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The distillation loop's server side on the real programs (docs/distill.md): mf-server on
# 127.0.0.1 with a builtin teacher (trained here by mf-train-teacher, small and quick) and a
# distill config for model "fashion" (Fashion-MNIST from Debian). Run 1 has no parent: the
# seed student is published as d1 without a canary. A device uplinks hard samples through
# the offload route; run 2 trains on seed + samples, is gated against d1 on the held-out
# items and either publishes d2 under a canary rollout or is rejected, with provenance
# either way. Faults: a trainer that crashes, one that writes garbage, and one that writes a
# worse student each end without a new version; a second run while one is pending is
# refused; an unconfigured model is 404; the data role may start runs, the ops role not.
# Usage: distill_loop.sh BIN_DIR   (ctest: integration_distill_loop)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
FM=/usr/share/datasets/fashion-mnist
work=$(mktemp -d /tmp/mf-distill.XXXXXX)
trap 'mf_stack_stop; [ -n "${MF_KEEP:-}" ] || rm -rf "$work"' EXIT
runs() { mfctl_admin distill status --json; }
versions_count() { mfctl_admin versions fashion --json | grep -o '"version":"[^"]*"' | sort -u | wc -l; }

"$BIN/mf-train-teacher" --train-images $FM/train-images-idx3-ubyte.gz \
    --train-labels $FM/train-labels-idx1-ubyte.gz --hidden 64 --epochs 2 \
    --out "$work/teacher.safetensors" >"$work/teacher.log" 2>&1 ||
    { cat "$work/teacher.log"; exit 1; }

# Trainers for the external-command contract: a crash, garbage, and a worse student (the
# parent with its first layer zeroed: every image looks alike).
cat >"$work/crash.sh" <<'SH'
exit 3
SH
cat >"$work/garbage.sh" <<'SH'
echo "not a model" >"$1/out/model.safetensors"
SH
cat >"$work/worse.py" <<'PY'
import json, struct, sys
d = sys.argv[1]
job = json.load(open(d + "/job.json"))
b = bytearray(open(d + "/" + job["parent"], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
s, e = hdr["fc1.weight"]["data_offsets"]
b[8 + n + s:8 + n + e] = bytes(e - s)
open(d + "/out/model.safetensors", "wb").write(b)
PY

cat >"$work/offload.json" <<JSON
{"models": {"fashion": {
  "teacher": {"connector": "builtin", "path": "$work/teacher.safetensors", "version": "t1"},
  "policy": {"enabled": true, "method": "max_softmax", "mode": "sync", "target_rate": 0.1}},
 "fashion-crash": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "fashion-garbage": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "fashion-worse": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "fashion-auto": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "foreign": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "foreign-garbage": {"teacher": {"connector": "builtin", "path": "$work/teacher.safetensors"}},
 "fashion-noteacher": {"teacher": {"connector": "command", "command": ["/bin/false"]}}}}
JSON
model_cfg() { # model_cfg TRAINER_JSON
    cat <<JSON
{"data": {"train_images": "$FM/train-images-idx3-ubyte.gz",
          "train_labels": "$FM/train-labels-idx1-ubyte.gz",
          "heldout_images": "$FM/t10k-images-idx3-ubyte.gz",
          "heldout_labels": "$FM/t10k-labels-idx1-ubyte.gz",
          "heldout_range": [5000, 7000], "seed_fraction": 0.05, "calibration": 2000},
 "trainer": $1,
 "release": {"key": "$work/keys/release.pem"},
 "rollout": {"soak_s": 1, "min_devices": 1, "waves": [{"percent": 50}, {"percent": 100}],
             "red_lines": [{"metric": "p99_latency_us", "relative": 2.0}]}}
JSON
}
# A family the server does not know (tests/integration/distill_foreign.py): trained and
# evaluated by commands on a smaller held-out and calibration set (pure Python is slow).
foreign_cfg() { # foreign_cfg EVAL_MODE OUTPUTS
    model_cfg '{"command": ["python3", "'"$root"'/tests/integration/distill_foreign.py", "train"]}' |
        sed 's/"heldout_range": \[5000, 7000\]/"heldout_range": [5000, 5500]/; s/"calibration": 2000/"calibration": 500/' |
        sed 's#^{#{"gate_test": "paired", "evaluator": {"command": ["python3", "'"$root"'/tests/integration/distill_foreign.py", "'"$1"'"], "timeout_s": 120, "outputs": "'"$2"'"}, #'
}
cat >"$work/distill.json" <<JSON
{"models": {
 "fashion": $(model_cfg '{"epochs": 4, "warm_start": true}'),
 "fashion-crash": $(model_cfg '{"command": ["/bin/sh", "'"$work"'/crash.sh"]}'),
 "fashion-garbage": $(model_cfg '{"command": ["/bin/sh", "'"$work"'/garbage.sh"]}'),
 "fashion-worse": $(model_cfg '{"command": ["python3", "'"$work"'/worse.py"]}'),
 "fashion-noteacher": $(model_cfg '{"epochs": 1}'),
 "fashion-auto": $(model_cfg '{"epochs": 1}' | sed 's/^{/{"auto_samples": 50, /'),
 "foreign": $(foreign_cfg eval logits),
 "foreign-garbage": $(foreign_cfg eval-garbage probabilities)}}
JSON
MF_SERVE_ARGS="--offload-config $work/offload.json --distill-config $work/distill.json --device-rate 1000"
export MF_SERVE_ARGS
mf_stack_start "$work/server" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" >/dev/null || exit 1 # the key the config names
tokens() { mfctl_admin tokens create "$1" "$1-team" --json |
    sed -n 's/.*"token":"\([^"]*\)".*/\1/p'; }
tokens data >"$work/data.token"
tokens ops >"$work/ops.token"
as_role() { local f=$1; shift; "$BIN/mfctl" --server "$MF_URL" --token-file "$f" "$@"; }

# -- run 1: the seed student, no parent, no canary
check "the ops role may not start a run (403)" \
    sh -c "$BIN/mfctl --server $MF_URL --token-file $work/ops.token distill run fashion 2>&1 | grep -q 'HTTP 403'"
as_role "$work/data.token" distill run fashion >"$work/run1.out" 2>&1
check "the data role starts run 1" grep -q "run 1: fashion queued" "$work/run1.out"
check "a second run while one is pending is refused (409)" \
    sh -c "$BIN/mfctl --server $MF_URL --token-file $work/data.token distill run fashion 2>&1 | grep -q 'HTTP 409: a distillation run of fashion is queued or running'"
check "an unconfigured model is refused (404)" \
    sh -c "$BIN/mfctl --server $MF_URL --token-file $work/data.token distill run nosuch 2>&1 | grep -q 'HTTP 404: model nosuch is not in the distill config'"
mfctl_admin distill wait 1 300 >"$work/wait1.out" 2>&1
check "run 1 published d1" grep -q "run 1: fashion published (manual), parent -, version d1" \
    "$work/wait1.out"
check "run 1: the first version passes the gate by definition" grep -q "gate: passed: first version" \
    "$work/wait1.out"
mfctl_admin versions show fashion d1 >"$work/show1.out"
check "versions show d1 prints its provenance" grep -q "provenance: made by run 1" "$work/show1.out"
check "d1 trained on 3000 seed images and no sample" grep -q "samples: 3000 seed, 0 hard, 0 audit" \
    "$work/show1.out"
check "d1 is released (sequence 1)" grep -q "sequence 1" "$work/show1.out"

# -- uplink: 400 hard samples labelled by the teacher
stored=$(python3 "$root/tests/integration/distill_uplink.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
    $FM/train-images-idx3-ubyte.gz cam-1 20000 400 d1)
check "400 uplinked samples stored" test "$stored" = 400

# -- run 2: seed + samples, gated against d1
mfctl_admin distill run fashion >/dev/null
mfctl_admin distill wait 2 300 >"$work/wait2.out" 2>&1
state=$(mfctl_admin distill status 2 --json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
check "run 2 ended published or rejected (state $state)" \
    sh -c "[ '$state' = published ] || [ '$state' = rejected ]"
# every uplinked sample is either trained on or dropped as teacher-unsure (confidence < 0.5)
used=$(sed -n 's/^samples: 3000 seed, \([0-9]*\) hard, 0 audit (dropped: \([0-9]*\) teacher-unsure, 0 held-out, 0 other).*/\1+\2/p' "$work/wait2.out")
check "run 2 accounts for the 400 samples ($used)" test "$((${used:-0}))" = 400
check "run 2 trained on most of them" test "${used%%+*}" -ge 300
check "run 2 was judged against parent d1" grep -q "  parent .*cascade" "$work/wait2.out"
check "run 2 records the paired comparison of the two cascades" \
    grep -q "  paired    cascade gain [-+][0-9.]* pt, 95 % bounds" "$work/wait2.out"
check "run 2 records teacher version t1" grep -q "teacher versions: t1" "$work/wait2.out"
if grep -q "published d2" "$work/wait2.out"; then
    # a patch is kept only when smaller than the file (0: none kept)
    sizes=$(sed -n 's/^published d2: \([0-9]*\) bytes (delta from the parent \([0-9]*\)).*/\1 \2/p' \
        "$work/wait2.out")
    check "run 2 records its patch from d1 ($sizes)" sh -c "set -- $sizes; [ \$# = 2 ] && [ \$2 -lt \$1 ]"
fi
if [ "$state" = published ]; then
    check "d2 went out as a canary of d1" sh -c "mfctl_admin() { :; }; $BIN/mfctl --server $MF_URL \
        --token-file $MF_ADMIN_TOKEN_FILE rollout status --json | grep -q '\"version\":\"d2\",\"previous\":\"d1\"'"
    check "no fleet rollback is set (an unpromoted release needs no guard)" sh -c "! $BIN/mfctl \
        --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE pins --json | grep -q '\"scope\":\"fleet\"'"
    check "d2 is published, not promoted: the fleet default stays d1" sh -c "$BIN/mfctl \
        --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE versions fashion | grep ' d2 ' \
        | grep -q 'not promoted'"
else
    check "a rejected candidate publishes nothing" test "$(versions_count)" = 1
fi

# -- faults: each run ends without a version and says why. fashion-worse starts from d1's
# file published by hand (a parent the external trainer can make worse).
d1_sha=$(mfctl_admin versions show fashion d1 --json | sed -n 's/.*"sha256":"\([0-9a-f]*\)".*/\1/p' | head -n 1)
mf_publish fashion-worse v1 "$work/server/blobs/${d1_sha:0:2}/$d1_sha" >/dev/null
for m in crash garbage worse; do
    mfctl_admin distill run fashion-$m >/dev/null
done
for id in 3 4 5; do mfctl_admin distill wait $id 300 >"$work/wait$id.out" 2>&1; done
check "a crashing trainer fails the run" grep -q "error: trainer /bin/sh failed (exit status 3)" \
    "$work/wait3.out"
check "a trainer's garbage fails the run" grep -q "not a student of the example family" \
    "$work/wait4.out"
check "a worse external candidate is rejected by the gate" \
    grep -q "gate: rejected: cascade accuracy below the parent's" "$work/wait5.out"
check "the rejected run names its parent v1" grep -q "parent v1" "$work/wait5.out"
check "fashion-worse still has v1 only" sh -c \
    "! $BIN/mfctl --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE versions fashion-worse | grep -q d2"
# models_lack NAME...: the model listing (which must succeed) names none of them
models_lack() {
    mfctl_admin models --json >"$work/models.json" || return 1
    for m in "$@"; do grep -q "\"$m\"" "$work/models.json" && return 1; done
    return 0
}
check "fashion-crash and fashion-garbage have no version" models_lack fashion-crash fashion-garbage
# -- the teacher is down: the gate cannot judge, the run fails, nothing is published
mfctl_admin distill run fashion-noteacher >/dev/null
mfctl_admin distill wait 6 300 >"$work/wait6.out" 2>&1
check "a run whose teacher is down fails at the gate" grep -q "error: teacher on held-out item 0" \
    "$work/wait6.out"
check "... and publishes nothing" models_lack fashion-noteacher

# -- auto trigger: 50 new labelled samples of fashion-auto start a run by themselves
sed 's/"model": "fashion"/"model": "fashion-auto"/' "$root/tests/integration/distill_uplink.py" \
    >"$work/uplink_auto.py"
python3 "$work/uplink_auto.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
    $FM/train-images-idx3-ubyte.gz cam-2 30000 60 none >/dev/null
auto=""
for _ in $(seq 1 60); do
    auto=$(mfctl_admin distill status --json | grep -o '"model":"fashion-auto","state":"[a-z]*","trigger":"auto"' || true)
    case $auto in *published* | *failed* | *rejected*) break ;; esac
    sleep 1
done
check "enough new samples start a run by themselves ($auto)" sh -c "echo '$auto' | grep -q '\"state\":\"published\",\"trigger\":\"auto\"'"
sleep 3 # further ticks: no new samples since that run's cursor, so no second run
check "the auto trigger does not repeat without new samples" \
    test "$(mfctl_admin distill status --json | grep -o '"model":"fashion-auto"' | wc -l)" = 1

# -- a family the server does not know: its trainer and evaluator commands (the evaluator
# never sees a label) carry it through the gate, the release and the canary
run_id() { sed -n 's/^run \([0-9]*\): .*queued.*/\1/p'; }
f1=$(mfctl_admin distill run foreign | run_id)
mfctl_admin distill wait "$f1" 300 >"$work/foreign1.out" 2>&1
check "run $f1 publishes the foreign family's seed model" grep -q "foreign published (manual), parent -, version d1" \
    "$work/foreign1.out"
check "its record keeps the trainer's command line and stderr" sh -c "grep -q 'trainer command: python3 .*distill_foreign.py train' $work/foreign1.out && grep -q 'trainer stderr: foreign trainer: 3000 labelled rows' $work/foreign1.out"
check "... and the SHA-256 of the trainer's output, which is the published file" sh -c \
    "t=\$(sed -n 's/^trainer output sha256 //p' $work/foreign1.out); [ \${#t} = 64 ] && [ \"\$t\" = \"\$(sed -n 's/.*sha256 \([0-9a-f]*\), rollout.*/\1/p' $work/foreign1.out)\" ]"
check "the evaluator's outputs decided the gate (1000 items: held-out and calibration)" sh -c \
    "grep -q 'evaluator (candidate) stderr: foreign evaluator: 1000 items' $work/foreign1.out && grep -q 'evaluator (candidate) output sha256 [0-9a-f]\{64\}' $work/foreign1.out"
acc=$(sed -n 's/^  candidate student *\([0-9.]*\) %.*/\1/p' "$work/foreign1.out")
check "the server's figures for the foreign model are real (student $acc % on held-out)" \
    awk -v a="${acc:-0}" 'BEGIN { exit !(a > 50 && a < 95) }'
f2=$(mfctl_admin distill run foreign | run_id)
mfctl_admin distill wait "$f2" 300 >"$work/foreign2.out" 2>&1
check "run $f2 evaluates the deployed parent d1 with the same command" sh -c \
    "grep -q 'evaluator (parent) stderr: foreign evaluator: 1000 items' $work/foreign2.out && grep -q '  parent .*cascade' $work/foreign2.out"
ps=$(sed -n 's/^evaluator (parent) output sha256 //p' "$work/foreign2.out")
cs=$(sed -n 's/^evaluator (candidate) output sha256 //p' "$work/foreign2.out")
check "the same model (same data, deterministic trainer) gives the same outputs" \
    sh -c "[ -n '$ps' ] && [ '$ps' = '$cs' ]"
check "the paired gate: no item differs, the bounds are 0, and it passes" sh -c \
    "grep -q 'paired    cascade gain +0.00 pt, 95 % bounds \[+0.00, +0.00\] pt (0 items' $work/foreign2.out && grep -q 'gate: passed: the paired lower bound' $work/foreign2.out"
check "... passes the gate and goes out as a canary of d1" sh -c \
    "grep -q 'foreign published (manual), parent d1, version d2' $work/foreign2.out && \
     $BIN/mfctl --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE rollout status --json | grep -q '\"model\":\"foreign\".*\"version\":\"d2\",\"previous\":\"d1\"'"
g=$(mfctl_admin distill run foreign-garbage | run_id)
mfctl_admin distill wait "$g" 300 >"$work/garbage-eval.out" 2>&1
check "an evaluator writing garbage fails the run, named" grep -q \
    "error: evaluating the candidate: evaluator output out/outputs.npy: not a .npy file" "$work/garbage-eval.out"
check "... and publishes nothing" models_lack foreign-garbage
check "no work directory is left behind" sh -c "! ls $work/server/blobs/tmp 2>/dev/null | grep -q distill"

echo "distill_loop: $MF_PASSED passed, $MF_FAILED failed"
[ "$MF_FAILED" -eq 0 ]
