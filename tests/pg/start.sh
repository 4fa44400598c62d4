#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts a private PostgreSQL for the tests (the ctest fixture mf_pg, tests/pg/CMakeLists.txt)
# and writes its URL to STATE/url; tests/pg/stop.sh STATE stops it and removes every file.
#
#   - MF_TEST_PG_URL set: that server is used as it is (nothing is started or stopped).
#   - a cluster this script started for STATE still answers: it is reused.
#   - otherwise: installs the `postgresql` package if it is missing, runs initdb into a fresh
#     /tmp directory owned by an unprivileged user (`mftest`, created when run as root; the
#     current user otherwise) and starts it with pg_ctl as that user, listening only on a
#     Unix socket in that 0700 directory (no TCP port at all).
#
# MF_PG_DURABLE=1 keeps fsync and synchronous commit on (benchmarks); tests run without them,
# which a throwaway cluster can afford.
# Usage: tests/pg/start.sh STATE_DIR
set -euo pipefail
state=${1:?usage: start.sh STATE_DIR}
mkdir -p "$state"

if [ -n "${MF_TEST_PG_URL:-}" ]; then
    printf '%s\n' "$MF_TEST_PG_URL" > "$state/url.tmp" && mv "$state/url.tmp" "$state/url"
    rm -f "$state/cluster"
    echo "pg: using MF_TEST_PG_URL"
    exit 0
fi

find_bindir() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then
        echo "$d"
    elif command -v initdb >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"
    fi
}

# As root: run as the cluster's owner (initdb and postgres refuse root). Otherwise: as is.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

alive() {
    [ -f "$state/cluster" ] || return 1
    # shellcheck disable=SC1091
    . "$state/cluster"
    [ -d "${pgdir:-/nonexistent}/data" ] && as_owner "$bindir/pg_ctl" -D "$pgdir/data" status >/dev/null 2>&1
}

owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
    owner=mftest
    if ! id -u "$owner" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$owner"
    fi
fi

if alive; then
    echo "pg: reusing the cluster in $pgdir"
    exit 0
fi

bindir=$(find_bindir)
if [ -z "$bindir" ]; then
    echo "pg: installing postgresql"
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends postgresql
    bindir=$(find_bindir)
fi
[ -n "$bindir" ] || { echo "pg: no initdb found" >&2; exit 1; }

pgdir=$(mktemp -d /tmp/mf-pg-XXXXXX)
chmod 0700 "$pgdir"
[ "$(id -u)" -eq 0 ] && chown "$owner" "$pgdir"
# Written first, so stop.sh can clean up after a start that failed half-way.
printf 'pgdir=%q\nbindir=%q\nowner=%q\n' "$pgdir" "$bindir" "$owner" > "$state/cluster"

durable=()
if [ "${MF_PG_DURABLE:-0}" != 1 ]; then
    durable=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
fi
as_owner "$bindir/initdb" -D "$pgdir/data" -U mftest --auth=trust -E UTF8 --locale=C \
    --no-sync >"$pgdir/initdb.log" 2>&1 || { cat "$pgdir/initdb.log" >&2; exit 1; }
# The port only names the socket file; with listen_addresses empty there is no TCP listener.
as_owner "$bindir/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
    -o "-c listen_addresses= -c unix_socket_directories=$pgdir -c port=5432 \
        -c max_connections=300 ${durable[*]}" start >/dev/null ||
    { cat "$pgdir/server.log" >&2; exit 1; }
printf 'postgresql:///postgres?host=%s&port=5432&user=mftest\n' "$pgdir" > "$state/url.tmp"
mv "$state/url.tmp" "$state/url"
echo "pg: started in $pgdir as $owner"
