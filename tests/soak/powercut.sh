#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Power cuts, the long run: test_powercut (tests/unit/agent/test_powercut.c) cutting at every
# storage call of the scenario on both disks - "none" (nothing unsynced survives a cut)
# and "prefix" (each file keeps a random prefix of what was written since its last sync:
# torn appends, zero-length rewrites) - once per seed (the seed drives the prefix lengths
# and the agent's random bytes). ctest runs the short form: 500 cut points, every call on
# the harsh disk and the rest spread over the prefix disk.
# Usage: powercut.sh BIN_DIR [SEEDS]   (default 4 seeds: ~2,900 cuts)
#   A failure names its cut point; rerun it alone with
#   MF_POWERCUT_ONLY=N MF_POWERCUT_KEEP=... MF_POWERCUT_SEED=... BIN_DIR/test_powercut
set -uo pipefail
BIN=$1
SEEDS=${2:-4}
fail=0
for keep in none prefix; do
    for seed in $(seq 1 "$SEEDS"); do
        # MF_POWERCUT_CUTS=1000000: more than the calls, so every call is a cut point.
        out=$(MF_POWERCUT_CUTS=1000000 MF_POWERCUT_KEEP=$keep MF_POWERCUT_SEED=$seed \
            "$BIN/test_powercut" 2>&1)
        rc=$?
        echo "== keep=$keep seed=$seed: rc $rc"
        grep -E "dry run|cuts \(|ERROR|FAILED" <<<"$out"
        [ "$rc" -eq 0 ] || fail=1
    done
done
[ "$fail" -eq 0 ] && echo "powercut soak: all passed" || echo "powercut soak: FAILED"
exit "$fail"
