#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/lib/loop_table.py (the round table of scripts/demo) on a fixture work directory:
# a seed, a promoted round (patch 3,072 B for +0.40 pt: 7,680 B per point), a rejected one
# (its patch not counted) and a promoted one that gained nothing (no bytes per point); the
# summary line adds the promoted patches and gains. Usage: loop_table_selftest.sh TABLE_PY
set -euo pipefail
table=$1
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
run() { # run ID VERSION PARENT_CASCADE CAND_CASCADE DELTA_BYTES
    printf '{"version": %s, "record": {"delta_bytes": %s, "metrics": {"parent": {"cascade_accuracy": %s}, "candidate": {"student_accuracy": 0.84, "cascade_accuracy": %s}}}}\n' \
        "$2" "$5" "$3" "$4" >"$w/run$1.json"
}
run 1 '"d1"' null 0.8638 null
run 2 '"d2"' 0.8638 0.8678 3072
run 3 null 0.8678 0.8660 2900
run 4 '"d3"' 0.8678 0.8678 1000
printf '{"round": 1, "run": 2, "outcome": "done"}\n{"round": 2, "run": 3, "outcome": "rejected"}\n{"round": 3, "run": 4, "outcome": "done"}\n' >"$w/rounds.jsonl"
out=$(python3 "$table" "$w")
fail() { echo "loop_table_selftest: $1"; echo "$out"; exit 1; }
grep -q 'patch   gain   B/pt' <<<"$out" || fail "no gain and B/pt columns"
grep -Eq '^ +1 d2 .* promoted +3\.0K +\+0\.40 +7680 \|' <<<"$out" || fail "round 1: 3.0K, +0.40 pt, 7680 B/pt"
grep -Eq '^ +2 - .* rejected +2\.8K +-0\.18 +- \|' <<<"$out" || fail "round 2: rejected, no B/pt"
grep -Eq '^ +3 d3 .* promoted +1\.0K +\+0\.00 +- \|' <<<"$out" ||
    fail "round 3: no gain, no B/pt"
grep -q '^promoted patches: 2 round(s), 4072 bytes in all, +0.40 pt held-out cascade gained over their parents, 10180 bytes per point$' <<<"$out" ||
    fail "summary line"
echo "loop_table_selftest: ok"
