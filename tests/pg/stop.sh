#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the cluster tests/pg/start.sh STATE_DIR started (bounded wait) and removes its files.
# A server given by MF_TEST_PG_URL is left alone. Usage: tests/pg/stop.sh STATE_DIR
set -euo pipefail
state=${1:?usage: stop.sh STATE_DIR}
rm -f "$state/url"
[ -f "$state/cluster" ] || exit 0
# shellcheck disable=SC1091
. "$state/cluster"
run() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}
if [ -d "$pgdir/data" ]; then
    run "$bindir/pg_ctl" -D "$pgdir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
        run "$bindir/pg_ctl" -D "$pgdir/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
fi
case "$pgdir" in
/tmp/mf-pg-*) rm -rf "$pgdir" ;;
esac
rm -f "$state/cluster"
echo "pg: stopped"
