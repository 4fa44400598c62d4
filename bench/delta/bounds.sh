#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How close each mf patch is to the entropy bound of what it codes, beside the best peer, and
# the encoder's peak memory (not a test; bench/delta/README.md, "Delta bounds").
#
# usage: bench/delta/bounds.sh BUILD_DIR [CORPUS_DIR] [PAIR...]
#   BUILD_DIR  a build of this tree (bin/mf-delta, bin/bench_delta_bounds)
#   CORPUS_DIR default /work/corpus (built by /work/shared/bench/fetch-corpus.sh if missing)
#   PAIR...    default: every pair but the 173 MB bundle
# env: BENCH_THREADS (default 2) encoder threads; BENCH_CACHE (default CORPUS_DIR/.bench-cache)
#      the peer results bench_delta.sh keeps (run it once first: without them the peer
#      columns are "-").
# Columns: the mf patch (bytes); the patch with its NUMERIC residual planes at their order-0
# (per block), order-1 previous-byte and order-1 plane-above entropy (bench_delta_bounds, in
# delta_bounds.c); mf / the tightest of the three bounds; the best peer (smallest of bsdiff,
# xdelta3, zstd --patch-from, HDiffPatch) and mf / peer; bound / peer, the best any coder of
# mf's residuals with that context could reach against the peer; the encoder's peak RSS
# (`/usr/bin/time -v`, MiB) and RSS / old file size.
set -euo pipefail
# shellcheck source=bench/delta/common.sh
. "$(dirname "$0")/common.sh"
bench_args "bounds.sh BUILD_DIR [CORPUS_DIR] [PAIR...]" "$@"
bounds=$build/bin/bench_delta_bounds
cache=${BENCH_CACHE:-$corpus/.bench-cache}
[ -x "$bounds" ] || { echo "no $bounds (build target bench_delta_bounds)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ ${#pairs[@]} -gt 0 ] ||
    mapfile -t pairs < <(cd "$corpus" && ls -d */ | tr -d / | grep -v '^human-models-bundle$' | sort)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf "%-24s %10s %10s %10s %10s %7s %-15s %10s %7s %7s %7s %6s\n" pair mf o0 o1prev o1plane \
    mf/bnd best_peer peer_bytes mf/peer bnd/peer enc_MiB rss/old
for pair in "${pairs[@]}"; do
    old=$(ls "$corpus/$pair"/old.*)
    new=$(ls "$corpus/$pair"/new.*)
    /usr/bin/time -v -o "$work/t" "$mf" diff --threads "$threads" "$old" "$new" "$work/p" \
        >/dev/null
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/t")
    read -r _ _ _ b0 b1 b2 < <("$mf" info "$work/p" | "$bounds" "$old" "$new")
    key=$(cat "$old" "$new" | sha256sum | cut -c1-16)
    peer=- peer_bytes=0
    for tool in bsdiff xdelta3 zstd-patch-from hdiffpatch; do
        [ -s "$cache/$key.$tool" ] || continue
        n=$(cut -d' ' -f1 "$cache/$key.$tool")
        if [ "$peer_bytes" -eq 0 ] || [ "$n" -lt "$peer_bytes" ]; then
            peer=$tool peer_bytes=$n
        fi
    done
    awk -v p="$pair" -v m="$(stat -c %s "$work/p")" -v b0="$b0" -v b1="$b1" -v b2="$b2" \
        -v peer="$peer" -v pb="$peer_bytes" -v rss="$rss" -v old="$(stat -c %s "$old")" 'BEGIN {
        b = b0; if (b1 < b) b = b1; if (b2 < b) b = b2
        printf "%-24s %10d %10d %10d %10d %7.3f %-15s %10s %7s %7s %7.1f %6.2f\n", p, m, b0, b1,
            b2, m / b, peer, (pb ? pb : "-"), (pb ? sprintf("%.3f", m / pb) : "-"),
            (pb ? sprintf("%.3f", b / pb) : "-"), rss / 1024, rss * 1024 / old }'
done
