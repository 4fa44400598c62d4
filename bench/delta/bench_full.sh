#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compressed full blob benchmark (not a test): modelferry's encoding of a whole model (an mf
# delta from the empty image, float planes; docs/formats/delta.md) against plain
# `zstd -19 --long=31` on every new file of the corpus of ../shared/bench, plus bf16 copies
# of its fp32 weight files (the high half of each fp32 word: what a bf16 export stores).
#
# usage: bench/delta/bench_full.sh BUILD_DIR [CORPUS_DIR] [PAIR...]
#   BUILD_DIR  a build of this tree (bin/mf-delta is used)
#   CORPUS_DIR default /work/corpus; built by /work/shared/bench/fetch-corpus.sh if missing
#   PAIR...    the pairs whose new file is measured (default: all); the fp32 rows of
#              facemesh's old export and the bf16 copies are always measured
# env: BENCH_THREADS (default 2) encoder threads for mf.
# Columns: file, kind, raw bytes, zstd bytes, mf bytes, zstd/mf (above 1 = mf smaller), mf
# encode wall s, mf decode CPU s (user+sys of `mf-delta patch`, which includes the SHA-256
# check of the output) and MB/s of output per CPU second, decode peak RSS, zstd decode CPU s.
set -euo pipefail

# shellcheck source=bench/delta/common.sh
. "$(dirname "$0")/common.sh"
bench_args "bench_full.sh BUILD_DIR [CORPUS_DIR] [PAIR...]" "$@"
for t in zstd python3 /usr/bin/time; do
    command -v "$t" >/dev/null || { echo "missing $t (apt-get install zstd python3 time)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$work/empty"

# The files: every pair's new file, and bf16 copies of the fp32 weight files.
files=()
kinds=()
[ ${#pairs[@]} -gt 0 ] || mapfile -t pairs < <(cd "$corpus" && ls -d */ | tr -d / | sort)
for pair in "${pairs[@]}"; do
    new=$(ls "$corpus/$pair"/new.*)
    case $pair in
    silero-vad-v4-to-v5) kind=fp32-onnx ;;
    synthetic-finetune | synthetic-partial) kind=fp32 ;;
    facemesh-f32-to-f16) kind=fp16 ;;
    pose-*) kind=fp16-tflite ;;
    human-models-bundle) kind=tar ;;
    synthetic-finetune-int8) kind=int8 ;;
    *) kind=other ;;
    esac
    files+=("$new")
    kinds+=("$kind")
done
# fp32 weights that are plain arrays (tfjs .bin): the synthetic ones and facemesh's old export.
for src in "$corpus/synthetic-finetune/new.bin" "$corpus/facemesh-f32-to-f16/old.bin"; do
    name=$(basename "$(dirname "$src")")
    [ "$name" = facemesh-f32-to-f16 ] && files+=("$src") && kinds+=(fp32)
    python3 - "$src" "$work/$name.bf16" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
n = len(d) // 4 * 4
out = bytearray(n // 2)
out[0::2] = d[2:n:4]
out[1::2] = d[3:n:4]
open(sys.argv[2], 'wb').write(out)
EOF
    files+=("$work/$name.bf16")
    kinds+=(bf16)
done

cpu() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }

printf "%-44s %-11s %10s %10s %10s %7s %7s %7s %7s %7s %7s\n" file kind raw zstd mf zstd/mf \
    enc_s dec_cpu dec_MBs dec_MiB zdec_cpu
for i in "${!files[@]}"; do
    f=${files[$i]}
    label=$(basename "$(dirname "$f")")/$(basename "$f")
    [[ $f == "$work"/* ]] && label="bf16 copy of $(basename "$f" .bf16)"
    raw=$(stat -c %s "$f")
    zstd -q -f -19 --long=31 -T1 "$f" -o "$work/z"
    /usr/bin/time -f "%U %S" -o "$work/zt" zstd -q -f -d --long=31 "$work/z" -o "$work/zo"
    /usr/bin/time -f "%e" -o "$work/et" "$mf" diff --threads "$threads" "$work/empty" "$f" \
        "$work/p" >/dev/null
    /usr/bin/time -f "%U %S %M" -o "$work/dt" "$mf" patch "$work/empty" "$work/p" "$work/o" \
        >/dev/null
    cmp -s "$work/o" "$f" || { echo "$label: mf output differs" >&2; exit 1; }
    cmp -s "$work/zo" "$f" || { echo "$label: zstd output differs" >&2; exit 1; }
    awk -v l="$label" -v k="${kinds[$i]}" -v r="$raw" -v z="$(stat -c %s "$work/z")" \
        -v m="$(stat -c %s "$work/p")" -v e="$(cat "$work/et")" -v d="$(cpu "$work/dt")" \
        -v dk="$(cut -d' ' -f3 "$work/dt")" -v zd="$(cpu "$work/zt")" 'BEGIN {
        printf "%-44s %-11s %10d %10d %10d %7.3f %7.2f %7.2f %7.0f %7.1f %7.2f\n", l, k, r, z, m,
            z / m, e, d, (d > 0 ? r / d / 1e6 : 0), dk / 1024, zd }'
done
