#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Delta-aware distillation against the unconstrained run (issue 21): mf-server on 127.0.0.1
# runs two loops side by side on Fashion-MNIST with the PyTorch trainer
# (examples/mnist/torch/student_trainer.py, int8 784-32-10, warm start): "full" lets every
# weight move, "delta" keeps all but the MAX_CHANGED share of int8 weights byte-equal to the
# parent (--max-changed). Each round uplinks NEW fresh train images (teacher-labelled, soft
# targets), runs both loops and gates them (paired, tolerance 0.001), promotes what passed
# (the next round's parent and warm start); per promoted round it
# prints the held-out cascade of both candidates, the patch from the parent (mfctl diff, the
# mf format devices apply) and bytes per point gained. Figures go to bench/loop/README.md.
# Usage: bench/loop/delta_rounds.sh BIN_DIR [REPS=3] [ROUNDS=3] [MAX_CHANGED=0.1] [NEW=500]
# Needs python3-torch (scripts/install-deps --torch). Prints TSV rows, then a summary.
set -uo pipefail
BIN=$1
REPS=${2:-3}
ROUNDS=${3:-3}
MAXC=${4:-0.1}
NEW=${5:-500}
# shellcheck source=bench/loop/loop_env.sh
. "$(dirname "$0")/loop_env.sh"
TRAINER=$TORCH/student_trainer.py
work=$(mktemp -d /tmp/mf-bench-loop.XXXXXX)
trap 'mf_stack_stop; rm -rf "$work"' EXIT
"$BIN/mf-train-teacher" --train-images $FM/train-images-idx3-ubyte.gz \
    --train-labels $FM/train-labels-idx1-ubyte.gz --hidden 256,128 --epochs 6 \
    --out "${MF_BENCH_TEACHER:-/tmp/mf-bench-loop-teacher.safetensors}" >"$work/teacher.log" 2>&1 ||
    { cat "$work/teacher.log"; exit 1; }
teacher=${MF_BENCH_TEACHER:-/tmp/mf-bench-loop-teacher.safetensors}
models=""
dcfg=""
sep=""
for rep in $(seq 1 "$REPS"); do
    for kind in full delta; do
        m=$kind-$rep
        args='"train"'
        [ $kind = delta ] && args='"train", "--max-changed", "'"$MAXC"'"'
        models="$models$sep\"$m\": {\"teacher\": {\"connector\": \"builtin\", \"path\": \"$teacher\", \"version\": \"t1\"}}"
        dcfg="$dcfg$sep\"$m\": {\"gate_test\": \"paired\", \"gate_tolerance\": 0.001,
  \"data\": $(mf_fashion_data 5000 10000 0.1 5000 | sed "s/}\$/, \"split_seed\": $rep}/"),
  \"trainer\": {\"command\": [\"$PY\", \"$TRAINER\", $args], \"epochs\": 5, \"warm_start\": true, \"seed\": $rep, \"timeout_s\": 600},
  \"release\": {\"key\": \"$work/keys/release.pem\"}}"
        sep=","
    done
done
loop_serve "$models" "$dcfg" || exit 1
run_id=0
# run MODEL: one distillation run, waited for; sets $out to its record
run() {
    run_id=$((run_id + 1))
    mfctl_admin distill run "$1" >/dev/null
    mfctl_admin distill wait "$run_id" 1200 >"$work/run$run_id.out" 2>&1
    out=$work/run$run_id.out
}
blob() { local s; s=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\), rollout.*/\1/p' "$1" | head -n 1); echo "$work/server/blobs/${s:0:2}/$s"; }
cascade() { sed -n "s/^  $2 .*cascade *\([0-9.]*\) %.*/\1/p" "$1"; }
echo "rep round loop state parent_cascade cand_cascade file_bytes patch_bytes changed"
for rep in $(seq 1 "$REPS"); do
    declare -A cur
    for kind in full delta; do run "$kind-$rep"; cur[$kind]=$(blob "$out"); done
    for r in $(seq 1 "$ROUNDS"); do
        first=$((20000 + (rep - 1) * ROUNDS * NEW + (r - 1) * NEW))
        for kind in full delta; do
            sed "s/\"model\": \"fashion\"/\"model\": \"$kind-$rep\"/" "$root/tests/integration/distill_uplink.py" >"$work/up.py"
            python3 "$work/up.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" $FM/train-images-idx3-ubyte.gz \
                "cam-$kind-$rep" "$first" "$NEW" none >/dev/null
            run "$kind-$rep"
            state=$(sed -n 's/^run [0-9]*: [^ ]* \([a-z]*\).*/\1/p' "$out" | head -n 1)
            changed=$(sed -n 's/^trainer stderr: student_trainer: \([0-9]* of [0-9]*\) int8.*/\1/p' "$out" | tr ' ' '_')
            fb=- pb=-
            if [ "$state" = published ]; then
                b=$(blob "$out")
                "$BIN/mfctl" diff "${cur[$kind]}" "$b" "$work/p" >/dev/null 2>&1
                fb=$(stat -c %s "$b")
                pb=$(stat -c %s "$work/p")
                cur[$kind]=$b
                # promoted at once (no canary here): the next round's parent and warm start
                v=$(sed -n 's/^published \(d[0-9]*\):.*/\1/p' "$out" | head -n 1)
                mfctl_admin promote "$kind-$rep" "$v" --force >/dev/null
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$r" "$kind" "$state" \
                "$(cascade "$out" parent)" "$(cascade "$out" candidate)" "$fb" "$pb" "${changed:--}"
        done
    done
done | tee "$work/rows.tsv"
awk -F'\t' '$4 == "published" { n[$3]++; pb[$3] += $8; fb[$3] += $7; g[$3] += $6 - $5 }
    { c[$3] += $6; k[$3]++; cand[$1 "/" $2 "/" $3] = $6 }
    END {
        for (l in k) {
            np = n[l] + 0
            printf "%s: %d of %d rounds promoted, mean candidate cascade %.2f %%, mean promoted patch %.0f B = %.1f %% of the file, gain %.2f pt per promoted round, %.0f patch bytes per point\n", l, np, k[l], c[l] / k[l], (np ? pb[l] / np : 0), (np ? 100 * pb[l] / fb[l] : 0), (np ? g[l] / np : 0), (g[l] > 0 ? pb[l] / g[l] : 0)
        }
        for (key in cand) if (key ~ /\/delta$/) { f = key; sub(/delta$/, "full", f); d += cand[key] - cand[f]; m++ }
        if (m) printf "delta - full candidate cascade: %+.2f pt (mean of %d rounds)\n", d / m, m
    }' "$work/rows.tsv"
