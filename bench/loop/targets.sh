#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The loop targets of issue 21 over repetitions: mf-server on 127.0.0.1 with the PyTorch CNN
# teacher (examples/mnist/torch/fashion_cnn.py, cached) served over KServe v2
# (kserve_server.py, loopback) as the teacher of uplinked samples and of the gate, int8
# 784-32-10 students trained by the PyTorch trainer (student_trainer.py, soft targets, warm
# start, 5 epochs), paired gate (tolerance 0.001), 10 % target offload. Per repetition two
# loops side by side, seeded alike: "hard" uplinks, each round, the NEW of POOL fresh train
# images the deployed student is least sure of (what a device at a 10 % target offloads,
# NEW = POOL / 10), "random" uplinks NEW of the same POOL drawn uniformly. A promoted
# candidate is deployed at once (no canary: the gate is what is measured). Prints one TSV row
# per run, then the targets, met or not. Figures go to bench/loop/README.md.
# Usage: bench/loop/targets.sh BIN_DIR [REPS=2] [ROUNDS=5] [POOL=5000] [NEW=500]
# Needs python3-torch (scripts/install-deps --torch); trains the CNN teacher once (minutes on
# 2 idle cores). MF_TARGETS_TEACHER=builtin uses the demo's C teacher (784-256-128-10 float
# MLP, trained once by mf-train-teacher and cached) instead, in process, for a machine too
# busy to train the CNN; the rest is the same.
set -uo pipefail
# shellcheck source=bench/loop/loop_env.sh
. "$(dirname "$0")/loop_env.sh"
BIN=$1
REPS=${2:-2}
ROUNDS=${3:-5}
POOL=${4:-5000}
NEW=${5:-500}
HELP=$root/bench/loop/targets_pick.py
cache=${XDG_CACHE_HOME:-$HOME/.cache}/modelferry
weights=$cache/teacher-fashion-cnn.pt
work=$(mktemp -d /tmp/mf-bench-targets.XXXXXX)
ks_pid=""
trap '[ -n "$ks_pid" ] && kill "$ks_pid" 2>/dev/null; mf_stack_stop; rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
mkdir -p "$cache"
if [ "${MF_TARGETS_TEACHER:-torch}" = builtin ]; then
    "$BIN/mf-train-teacher" --train-images $FM/train-images-idx3-ubyte.gz \
        --train-labels $FM/train-labels-idx1-ubyte.gz --hidden 256,128 --epochs 8 \
        --out "$cache/teacher-fashion.safetensors" >"$work/teacher.log" 2>&1 ||
        { cat "$work/teacher.log"; exit 1; }
    teacher_acc=$("$PY" "$HELP" teacher-mlp "$cache/teacher-fashion.safetensors")
    teacher='{"connector": "builtin", "path": "'"$cache"'/teacher-fashion.safetensors", "version": "t1"}'
    echo "teacher: built-in C MLP (MF_TARGETS_TEACHER=builtin)"
else
    "$PY" "$TORCH/fashion_cnn.py" --out "$weights" --threads 2 >"$work/teacher.log" 2>&1 ||
        { cat "$work/teacher.log"; exit 1; }
    teacher_acc=$("$PY" "$HELP" teacher "$weights")
    "$PY" "$TORCH/kserve_server.py" --weights "$weights" --name fashion-cnn --port 0 \
    --port-file "$work/kserve.port" --threads 2 2>"$work/kserve.log" &
    ks_pid=$!
    for _ in $(seq 1 600); do # bounded: importing torch takes seconds on a busy machine
        [ -s "$work/kserve.port" ] && break
        kill -0 "$ks_pid" 2>/dev/null || { cat "$work/kserve.log"; exit 1; }
        sleep 0.1
    done
    [ -s "$work/kserve.port" ] || { echo "model server did not start"; exit 1; }
    teacher='{"connector": "kserve", "url": "http://127.0.0.1:'"$(cat "$work/kserve.port")"'",
      "name": "fashion-cnn", "input_name": "input", "datatype": "UINT8", "output": "probs",
      "timeout_ms": 20000, "concurrency": 4}'
    echo "teacher: PyTorch CNN over KServe v2"
fi
models="" dcfg="" sep="" run_id=0
for rep in $(seq 1 "$REPS"); do
    for kind in hard random; do
        m=$kind-$rep
        models="$models$sep\"$m\": {\"teacher\": $teacher}"
        dcfg="$dcfg$sep\"$m\": {\"gate_test\": \"paired\", \"gate_tolerance\": 0.001, \"target_rate\": 0.1,
  \"data\": $(mf_fashion_data 5000 10000 0.1 5000 | sed "s/}\$/, \"split_seed\": $rep}/"),
  \"trainer\": {\"command\": [\"$PY\", \"$TORCH/student_trainer.py\", \"train\"], \"epochs\": 5,
                \"warm_start\": true, \"seed\": $rep, \"timeout_s\": 900},
  \"release\": {\"key\": \"$work/keys/release.pem\"}}"
        sep=","
    done
done
loop_serve "$models" "$dcfg" || exit 1
run() { # run MODEL: one distillation run, waited for; its record in $work/run<ID>.json
    run_id=$((run_id + 1))
    mfctl_admin distill run "$1" >/dev/null
    mfctl_admin distill wait "$run_id" 1800 >/dev/null 2>&1
    mfctl_admin distill status "$run_id" --json >"$work/run$run_id.json"
}
# field RUN EXPR: a Python expression over the run record r (dict), printed
field() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); m=r.get("record",{}).get("metrics",{}); print(eval(sys.argv[2]))' "$work/run$1.json" "$2"; }
blob() { local s; s=$(field "$1" 'r.get("sha256") or r.get("record",{}).get("sha256")'); echo "$work/server/blobs/${s:0:2}/$s"; }
echo "rep round loop state parent_student parent_cascade cand_student cand_cascade cand_offload deployed_student deployed_cascade"
for rep in $(seq 1 "$REPS"); do
    declare -A cur dep_s dep_c
    for kind in hard random; do
        run "$kind-$rep"
        cur[$kind]=$(blob $run_id)
        dep_s[$kind]=$(field $run_id '"%.2f" % (100 * m["candidate"]["student_accuracy"])')
        dep_c[$kind]=$(field $run_id '"%.2f" % (100 * m["candidate"]["cascade_accuracy"])')
        printf '%s\t0\t%s\t%s\t-\t-\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$kind" "$(field $run_id 'r["state"]')" \
            "${dep_s[$kind]}" "${dep_c[$kind]}" "$(field $run_id '"%.2f" % (100 * m["candidate"]["offload_rate"])')" \
            "${dep_s[$kind]}" "${dep_c[$kind]}"
    done
    for r in $(seq 1 "$ROUNDS"); do
        first=$((20000 + ((rep - 1) * ROUNDS + r - 1) * POOL))
        for kind in hard random; do
            "$PY" "$HELP" pick "${cur[$kind]}" "$first" "$POOL" "$NEW" "$kind" "$((rep * 100 + r))" "$work/pick" ||
                exit 1
            sed "s/\"model\": \"fashion\"/\"model\": \"$kind-$rep\"/" \
                "$root/tests/integration/distill_uplink.py" >"$work/up.py"
            python3 "$work/up.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" $FM/train-images-idx3-ubyte.gz \
                "cam-$kind-$rep" "@$work/pick" 0 none >/dev/null || exit 1
            run "$kind-$rep"
            state=$(field $run_id 'r["state"]')
            if [ "$state" = published ]; then
                cur[$kind]=$(blob $run_id)
                mfctl_admin promote "$kind-$rep" "$(field $run_id 'r["version"]')" --force >/dev/null
                dep_s[$kind]=$(field $run_id '"%.2f" % (100 * m["candidate"]["student_accuracy"])')
                dep_c[$kind]=$(field $run_id '"%.2f" % (100 * m["candidate"]["cascade_accuracy"])')
            fi
            printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$r" "$kind" "$state" "$(field $run_id \
                '"\t".join("%.2f" % (100 * v) for v in (m["parent"]["student_accuracy"], m["parent"]["cascade_accuracy"], m["candidate"]["student_accuracy"], m["candidate"]["cascade_accuracy"], m["candidate"]["offload_rate"])) if m.get("parent") else "-\t-\t-\t-\t-"')	${dep_s[$kind]}	${dep_c[$kind]}"
        done
    done
done | tee "$work/rows.tsv"
python3 "$root/bench/loop/targets_summary.py" "$work/rows.tsv" "$teacher_acc" "$ROUNDS"
