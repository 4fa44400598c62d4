# SPDX-License-Identifier: Apache-2.0
# Sourced by the bench/delta scripts: their common arguments, BUILD_DIR [CORPUS_DIR] [PAIR...].
# bench_args USAGE "$@" sets build, corpus (default /work/corpus, built by
# /work/shared/bench/fetch-corpus.sh if missing), pairs (the rest), mf (BUILD_DIR's mf-delta,
# which must exist) and threads (BENCH_THREADS, default 2).
bench_args() {
    local usage=$1
    shift
    build=${1:?usage: $usage}
    corpus=${2:-/work/corpus}
    shift $(($# >= 2 ? 2 : 1))
    pairs=("$@")
    mf=$build/bin/mf-delta
    threads=${BENCH_THREADS:-2}
    [ -x "$mf" ] || { echo "no $mf (build the tree first)" >&2; exit 1; }
    [ -d "$corpus" ] || bash /work/shared/bench/fetch-corpus.sh "$corpus"
}
