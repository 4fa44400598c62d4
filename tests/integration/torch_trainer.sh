#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch trainer of the example (examples/mnist/torch/student_trainer.py) on the trainer
# contract, through the real mf-server (docs/distill.md, "The PyTorch trainer"):
#   mlp  the example family: the seed student is trained by PyTorch, decoded and gated by the
#        server itself and published; the C device inference (mf-example-classify --logits)
#        and the trainer's int8 reference agree bit for bit on all 10,000 test images; run 2
#        (warm start from the deployed d1, soft targets of 300 uplinked samples, at most 10 %
#        of the int8 weights changed) keeps to its limit and is gated against d1.
#   cnn  a family the server knows nothing about (int8 CNN, examples/mnist/mf_cnn_student.h):
#        trained by PyTorch, judged through the evaluator contract by the C inference
#        (mf-example-cnn-eval) for candidate and parent, published and canaried; the C
#        evaluator and the trainer's reference agree bit for bit on all test images.
# Needs python3-torch (scripts/install-deps --torch); skips without it (fails under
# MF_TEST_NO_SKIP). Usage: torch_trainer.sh BIN_DIR mlp|cnn (ctest integration_torch_*)
set -uo pipefail
BIN=$1
FAMILY=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
FM=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3 # Debian's Python: python3-torch and python3-numpy live there
TRAINER=$root/examples/mnist/torch/student_trainer.py
work=$(mktemp -d /tmp/mf-torch-trainer.XXXXXX)
trap 'mf_stack_stop; [ -n "${MF_KEEP:-}" ] || rm -rf "$work"' EXIT
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    mf_skip "python3-torch is not installed (scripts/install-deps --torch)"
    exit $((MF_FAILED > 0))
fi

"$BIN/mf-train-teacher" --train-images $FM/train-images-idx3-ubyte.gz \
    --train-labels $FM/train-labels-idx1-ubyte.gz --hidden 64 --epochs 2 \
    --out "$work/teacher.safetensors" >"$work/teacher.log" 2>&1 ||
    { cat "$work/teacher.log"; exit 1; }
M=fashion-$FAMILY
cat >"$work/offload.json" <<JSON
{"models": {"$M": {
  "teacher": {"connector": "builtin", "path": "$work/teacher.safetensors", "version": "t1"}}}}
JSON
if [ "$FAMILY" = mlp ]; then
    trainer='{"command": ["'"$PY"'", "'"$TRAINER"'", "train", "--max-changed", "0.1"], "epochs": 3, "warm_start": true, "timeout_s": 300}'
    extra='"gate_test": "paired", "gate_tolerance": 0.01,'
else
    trainer='{"command": ["'"$PY"'", "'"$TRAINER"'", "train", "--family", "cnn"], "epochs": 2, "warm_start": true, "timeout_s": 300}'
    extra='"gate_test": "paired", "gate_tolerance": 0.01, "evaluator": {"command": ["'"$BIN"'/mf-example-cnn-eval"], "timeout_s": 120, "outputs": "logits"},'
fi
cat >"$work/distill.json" <<JSON
{"models": {"$M": {$extra
  "data": $(mf_fashion_data 5000 6500 0.05 1500),
  "trainer": $trainer,
  "release": {"key": "$work/keys/release.pem"},
  "rollout": {"soak_s": 1, "min_devices": 1, "waves": [{"percent": 100}],
              "red_lines": [{"metric": "p99_latency_us", "relative": 2.0}]}}}}
JSON
MF_SERVE_ARGS="--offload-config $work/offload.json --distill-config $work/distill.json --device-rate 1000"
export MF_SERVE_ARGS
mf_stack_start "$work/server" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" >/dev/null || exit 1

# -- run 1: the seed student, trained by PyTorch
mfctl_admin distill run "$M" >/dev/null
mfctl_admin distill wait 1 300 >"$work/run1.out" 2>&1
check "run 1 publishes the PyTorch-trained seed student of $M" \
    grep -q "run 1: $M published (manual), parent -, version d1" "$work/run1.out"
check "its record keeps the PyTorch trainer's command line and stderr" sh -c \
    "grep -q 'trainer command: .*student_trainer.py train' $work/run1.out && grep -q 'trainer stderr: student_trainer: $FAMILY, 3000 rows' $work/run1.out"
sha=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\), rollout.*/\1/p' "$work/run1.out" | head -n 1)
d1=$work/server/blobs/${sha:0:2}/$sha
check "d1's blob is on disk" test -s "$d1"
acc=$(sed -n 's/^  candidate student *\([0-9.]*\) %.*/\1/p' "$work/run1.out")
check "the server's held-out figures for d1 are real (student $acc %)" \
    sh -c "[ -n '$acc' ] && [ ${acc%%.*} -ge 65 ]"

# -- the C inference and the trainer's int8 reference agree on every test image
"$PY" "$TRAINER" logits "$d1" $FM/t10k-images-idx3-ubyte.gz "$work/ref.f32" 2>"$work/ref.err"
if [ "$FAMILY" = mlp ]; then
    "$BIN/mf-example-classify" --logits "$work/c.f32" "$d1" >"$work/classify.out" 2>&1
    check "the server decodes the PyTorch output as an example-family student" \
        grep -q "^10000 images: student accuracy" "$work/classify.out"
else
    mkdir -p "$work/ev/out" && cp "$d1" "$work/ev/model.bin"
    "$PY" - "$work/ev" <<'PY'
import gzip, json, sys
import numpy as np
d = sys.argv[1]
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    f.read(16)
    x = np.frombuffer(f.read(), np.uint8).reshape(-1, 784)
np.save(d + "/inputs.npy", x)
json.dump({"n": len(x), "dim": 784, "classes": 10, "heldout": len(x), "calibration": 0,
           "model": "model.bin", "inputs": "inputs.npy", "outputs": "out/outputs.npy",
           "kind": "logits"}, open(d + "/job.json", "w"))
PY
    "$BIN/mf-example-cnn-eval" "$work/ev" 2>"$work/ev.err"
    "$PY" -c "import numpy as np; np.load('$work/ev/out/outputs.npy').astype('<f4').tofile('$work/c.f32')"
fi
check "C and the trainer's reference: 10,000 test images' logits bit for bit" sh -c \
    "[ \$(stat -c %s $work/c.f32) = 400000 ] && cmp -s $work/c.f32 $work/ref.f32"

# -- run 2: warm start from d1 with 300 uplinked samples' soft targets
sed "s/\"model\": \"fashion\"/\"model\": \"$M\"/" "$root/tests/integration/distill_uplink.py" \
    >"$work/uplink.py"
stored=$(python3 "$work/uplink.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
    $FM/train-images-idx3-ubyte.gz cam-1 20000 300 d1)
check "300 uplinked samples stored" test "$stored" = 300
mfctl_admin distill run "$M" >/dev/null
mfctl_admin distill wait 2 300 >"$work/run2.out" 2>&1
state=$(mfctl_admin distill status 2 --json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
check "run 2 ended published or rejected (state $state)" \
    sh -c "[ '$state' = published ] || [ '$state' = rejected ]"
check "run 2 trained on the seed and the uplinked samples" \
    grep -q "^samples: 3000 seed, [1-9][0-9]* hard" "$work/run2.out"
check "run 2 was gated against d1 with the paired comparison" sh -c \
    "grep -q '  parent .*cascade' $work/run2.out && grep -q '  paired    cascade gain' $work/run2.out"
if [ "$FAMILY" = mlp ]; then
    changed=$(sed -n 's/^trainer stderr: student_trainer: \([0-9]*\) of \([0-9]*\) int8 weights changed.*/\1 \2/p' \
        "$work/run2.out")
    check "the delta-aware trainer changed at most 10 % of d1's int8 weights ($changed)" \
        sh -c "set -- $changed; [ \$# = 2 ] && [ \$1 -gt 0 ] && [ \$((\$1 * 10)) -le \$2 ]"
    if [ "$state" = published ]; then # the patch a device of d1 downloads (mf format)
        sha2=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\), rollout.*/\1/p' "$work/run2.out" | head -n 1)
        d2=$work/server/blobs/${sha2:0:2}/$sha2
        "$BIN/mfctl" diff "$d1" "$d2" "$work/d1-d2.patch" >/dev/null 2>&1
        sizes="$(stat -c %s "$d2" 2>/dev/null) $(stat -c %s "$work/d1-d2.patch" 2>/dev/null)"
        check "its patch from d1 is at most 25 % of the file ($sizes)" \
            sh -c "set -- $sizes; [ \$# = 2 ] && [ \$2 -gt 0 ] && [ \$((\$2 * 4)) -le \$1 ]"
    fi
else
    check "the evaluator (the C inference) judged the candidate and the parent" sh -c \
        "grep -q 'evaluator (candidate) stderr: mf-example-cnn-eval: 3000 items' $work/run2.out && grep -q 'evaluator (parent) stderr: mf-example-cnn-eval: 3000 items' $work/run2.out"
    if [ "$state" = published ]; then
        check "d2 of the CNN family went out as a canary of d1" sh -c "$BIN/mfctl --server $MF_URL \
            --token-file $MF_ADMIN_TOKEN_FILE rollout status --json | grep -q '\"version\":\"d2\",\"previous\":\"d1\"'"
    fi
fi

echo "torch_trainer $FAMILY: $MF_PASSED passed, $MF_FAILED failed"
[ "$MF_FAILED" -eq 0 ]
