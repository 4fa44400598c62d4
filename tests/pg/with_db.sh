#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a test against a fresh database on the mf_pg fixture's PostgreSQL: creates it, exports
# its URL as MF_TEST_STORE_URL (scripts/lib/stack.sh then serves mf-server on it), runs the
# command and drops the database afterwards, whatever the command's outcome.
# Usage: with_db.sh TAG COMMAND [ARGS...]   (needs MF_TEST_PG_URL_FILE, set by ctest)
set -euo pipefail
tag=$1
shift
base=$(cat "${MF_TEST_PG_URL_FILE:?run under ctest (fixture mf_pg)}")
db="mft_${tag}_$$"
# The same URL with its database (the path after the authority) replaced.
url=$(printf '%s' "$base" | sed -E "s#^(postgres(ql)?://[^/?]*)/[^?]*#\\1/$db#")
psql -q -v ON_ERROR_STOP=1 "$base" -c "CREATE DATABASE $db" >/dev/null
cleanup() { psql -q "$base" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; }
trap cleanup EXIT
export MF_TEST_STORE_URL=$url
status=0
"$@" || status=$?
exit "$status"
