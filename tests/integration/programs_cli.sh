#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every program the build makes (tests/integration/CMakeLists.txt lists each executable
# outside tests/ and bench/, so a new one cannot be missed) answers the same way:
# `--help` prints a man-page-style usage (NAME, SYNOPSIS, its own name) on stdout and exits 0,
# `--version` prints "NAME VERSION" with the project version and exits 0, and an unknown
# flag exits 2 with a message naming the flag on stderr (docs/operations.md, "Programs").
# Usage: programs_cli.sh VERSION PROGRAM...   (run by ctest as integration_programs_cli)
set -uo pipefail
version=$1
shift
[ $# -gt 0 ] || { echo "FAIL: no programs given"; exit 1; }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
for prog in "$@"; do
    name=$(basename "$prog")
    "$prog" --help >"$out" 2>"$err"; rc=$?
    [ $rc -eq 0 ] || fail "$name --help exits $rc"
    for part in NAME SYNOPSIS "$name"; do
        grep -q -- "$part" "$out" || fail "$name --help: no \"$part\" on stdout"
    done
    "$prog" --version >"$out" 2>"$err"; rc=$?
    [ $rc -eq 0 ] || fail "$name --version exits $rc"
    [ "$(cat "$out")" = "$name $version" ] ||
        fail "$name --version prints \"$(head -c 200 "$out")\", not \"$name $version\""
    "$prog" --no-such-flag >"$out" 2>"$err" </dev/null; rc=$?
    [ $rc -eq 2 ] || fail "$name --no-such-flag exits $rc, not 2"
    grep -q -- "--no-such-flag" "$err" || fail "$name --no-such-flag: stderr does not name it"
    echo "ok: $name"
done
exit $failed
