#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Delta benchmark (not a test): modelferry vs bsdiff 4.3, xdelta3 -9, zstd --patch-from,
# HDiffPatch (`hdiffz -m`) and plain zstd on the model-pair corpus of ../shared/bench
# (fetched once, cached).
#
# usage: bench/delta/bench_delta.sh BUILD_DIR [CORPUS_DIR] [PAIR...]
#   BUILD_DIR  a build of this tree (bin/mf-delta is used)
#   CORPUS_DIR default /work/corpus; built by /work/shared/bench/fetch-corpus.sh if missing
# env: BENCH_CACHE (default CORPUS_DIR/.bench-cache) keeps peer results keyed by file digests,
#      so reruns only measure modelferry again; BENCH_TIMEOUT (default 1800 s) per peer run;
#      BENCH_THREADS (default 2) encoder threads for mf;
#      HDIFFPATCH_SRC (default /work/.mirror/sisong+HDiffPatch/repo): a git directory or a
#      checkout of github.com/sisong/HDiffPatch. hdiffz/hpatchz are built from it once into
#      BENCH_CACHE/hdiffpatch-<commit> (a scratch build, never part of this tree); without
#      it the HDiffPatch rows say "failed/timeout".
# Columns: patch bytes, % of new, % of `zstd -19 --long=31` of new, encode seconds and peak
# RSS, apply seconds and peak RSS (GNU time), and mf's patch size as a ratio of each peer.
set -euo pipefail

build=${1:?usage: bench_delta.sh BUILD_DIR [CORPUS_DIR] [PAIR...]}
corpus=${2:-/work/corpus}
shift $(( $# >= 2 ? 2 : 1 ))
mf=$build/bin/mf-delta
cache=${BENCH_CACHE:-$corpus/.bench-cache}
tmo=${BENCH_TIMEOUT:-1800}
threads=${BENCH_THREADS:-2}
[ -x "$mf" ] || { echo "no $mf (build the tree first)" >&2; exit 1; }
[ -d "$corpus" ] || bash /work/shared/bench/fetch-corpus.sh "$corpus"
for t in bsdiff bspatch xdelta3 zstd /usr/bin/time; do
    command -v "$t" >/dev/null || { echo "missing $t (apt-get install bsdiff xdelta3 zstd time)" >&2; exit 1; }
done
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# HDiffPatch from source, system zstd and bzip2 (no lzma, libdeflate, md5 or xxhash sources).
hdp_src=${HDIFFPATCH_SRC:-/work/.mirror/sisong+HDiffPatch/repo}
hdp=""
if [ -d "$hdp_src" ]; then
    if git --git-dir="$hdp_src" rev-parse HEAD >/dev/null 2>&1; then
        hdp_rev=$(git --git-dir="$hdp_src" rev-parse --short HEAD)
    else
        hdp_rev=$(git -C "$hdp_src" rev-parse --short HEAD 2>/dev/null || echo local)
    fi
    hdp=$cache/hdiffpatch-$hdp_rev
    if [ ! -x "$hdp/hdiffz" ] || [ ! -x "$hdp/hpatchz" ]; then
        rm -rf "$hdp" && mkdir -p "$hdp"
        if git --git-dir="$hdp_src" rev-parse HEAD >/dev/null 2>&1; then
            git --git-dir="$hdp_src" archive HEAD | tar -x -C "$hdp"
        else
            cp -r "$hdp_src"/. "$hdp"
        fi
        make -C "$hdp" -j2 LDEF=0 LZMA=0 ZSTD=2 MD5=0 XXH=0 BZIP2=2 VCD=0 hdiffz hpatchz \
            >"$hdp.log" 2>&1 || { echo "HDiffPatch build failed: $hdp.log" >&2; hdp=""; }
    fi
fi

# run NAME CMD...: runs CMD under GNU time; prints "seconds maxrss_kib" or "timeout".
run() {
    if timeout "$tmo" /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err"; then
        cat "$work/time"
    else
        echo "fail fail"
    fi
}

# measure TOOL OLD NEW: prints "bytes enc_s enc_kib dec_s dec_kib" (cached for peers).
measure() {
    local tool=$1 old=$2 new=$3 key p="$work/patch" o="$work/out" enc dec
    key=$(cat "$old" "$new" | sha256sum | cut -c1-16).$tool
    if [ "$tool" != mf ] && [ -s "$cache/$key" ]; then cat "$cache/$key"; return; fi
    case $tool in
    mf) enc=$(run "$mf" diff --threads "$threads" "$old" "$new" "$p")
        dec=$(run "$mf" patch "$old" "$p" "$o") ;;
    bsdiff) enc=$(run bsdiff "$old" "$new" "$p")
        dec=$(run bspatch "$old" "$o" "$p") ;;
    xdelta3) enc=$(run xdelta3 -9 -e -f -s "$old" "$new" "$p")
        dec=$(run xdelta3 -d -f -s "$old" "$p" "$o") ;;
    zstd-patch-from) enc=$(run zstd -q -f -19 --long=31 -T1 --patch-from="$old" "$new" -o "$p")
        dec=$(run zstd -q -f -d --long=31 --patch-from="$old" "$p" -o "$o") ;;
    zstd) enc=$(run zstd -q -f -19 --long=31 -T1 "$new" -o "$p")
        dec=$(run zstd -q -f -d --long=31 "$p" -o "$o") ;;
    hdiffpatch)
        [ -n "$hdp" ] || { echo "fail - - - -"; return; }
        enc=$(run "$hdp/hdiffz" -m-6 -SD -c-zstd-21-24 -p-1 -f "$old" "$new" "$p")
        dec=$(run "$hdp/hpatchz" -f "$old" "$p" "$o") ;;
    esac
    if [ "${enc%% *}" = fail ] || [ "${dec%% *}" = fail ] || ! cmp -s "$o" "$new"; then
        echo "fail - - - -"
        return
    fi
    local line
    line="$(stat -c %s "$p") $enc $dec"
    [ "$tool" = mf ] || echo "$line" >"$cache/$key"
    echo "$line"
}

pairs=("$@")
if [ ${#pairs[@]} -eq 0 ]; then
    mapfile -t pairs < <(cd "$corpus" && ls -d */ | tr -d / | sort)
fi
printf "%-24s %-16s %11s %6s %7s %8s %8s %7s %8s %9s\n" pair tool bytes %new %zstd \
    enc_s enc_MiB dec_s dec_MiB mf/peer
for pair in "${pairs[@]}"; do
    old=$(ls "$corpus/$pair"/old.*)
    new=$(ls "$corpus/$pair"/new.*)
    nsize=$(stat -c %s "$new")
    declare -A res=()
    for tool in zstd mf bsdiff xdelta3 zstd-patch-from hdiffpatch; do
        res[$tool]=$(measure "$tool" "$old" "$new")
    done
    zbytes=$(echo "${res[zstd]}" | cut -d' ' -f1)
    mfbytes=$(echo "${res[mf]}" | cut -d' ' -f1)
    for tool in mf bsdiff xdelta3 zstd-patch-from hdiffpatch zstd; do
        read -r b es ek ds dk <<<"${res[$tool]}"
        if [ "$b" = fail ]; then
            printf "%-24s %-16s %11s\n" "$pair" "$tool" "failed/timeout"
            continue
        fi
        awk -v p="$pair" -v t="$tool" -v b="$b" -v n="$nsize" -v z="$zbytes" -v es="$es" \
            -v ek="$ek" -v ds="$ds" -v dk="$dk" -v m="$mfbytes" 'BEGIN {
            printf "%-24s %-16s %11d %6.1f %7.1f %8.2f %8.1f %7.2f %8.1f %9.3f\n", p, t, b,
                100 * b / n, 100 * b / z, es, ek / 1024, ds, dk / 1024, m / b }'
    done
    unset res
done
