#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server benchmarks, side by side in one run on loopback with wrk (bench/server/README.md):
#   1. blob serving: mf-server GET /v1/blobs/<sha256> vs nginx serving the same file, both
#      with random 1 MiB Range requests (range.lua);
#   2. check-ins: authenticated POST /v1/checkin (credential lookup, last-seen and sequence
#      writes, a signed assignment) vs nginx serving a static JSON file of the same size;
#   0. first, bytes per check-in answer by model size: an older agent and one naming the
#      release it holds, with nothing to do and with a new release (bench_bytes);
# each on the SQLite store and on PostgreSQL (a private, durable cluster from tests/pg/),
# printed as ratios to nginx. Not a test: it takes about 6 x SECONDS plus set-up.
# Usage: bench/server/run.sh BIN_DIR [SECONDS]   (BIN_DIR holds mf-server, mfctl, mf_pg_seed)
# Tunables (environment): MF_BENCH_CONNS (16), MF_BENCH_WRK_THREADS (2), MF_BENCH_BLOB_MB (64),
# MF_BENCH_DEVICES (64), MF_BENCH_SERVER_THREADS (unset: mf-server's default for the store),
# MF_BENCH_SERVE_ARGS (more mf-server serve options, e.g. "--sign-batch 1"), MF_BENCH_ONLY=bytes
# (only the first phase: bytes per check-in answer by model size).
set -euo pipefail
BIN=$(cd "$1" && pwd)
secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
conns=${MF_BENCH_CONNS:-16}
wrk_threads=${MF_BENCH_WRK_THREADS:-2}
blob_mb=${MF_BENCH_BLOB_MB:-64}
devices=${MF_BENCH_DEVICES:-64}
srv_threads=${MF_BENCH_SERVER_THREADS:-}
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

"$here/install-deps.sh"
work=$(mktemp -d /tmp/mf-bench.XXXXXX)
nginx_conf=""
cleanup() {
    [ -n "$nginx_conf" ] && nginx -c "$nginx_conf" -p "$work" -s stop 2>/dev/null
    mf_stack_stop
    bash "$root/tests/pg/stop.sh" "$work/pg" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_wrk NAME SCRIPT URL: runs wrk (SCRIPT "" for plain GETs), prints "<requests/s> <MiB/s>";
# fails on any error reply.
run_wrk() {
    local name=$1 script=$2 url=$3 out="$work/$1.wrk" sopt=()
    [ -n "$script" ] && sopt=(-s "$script")
    wrk -t"$wrk_threads" -c"$conns" -d"${secs}s" --latency "${sopt[@]}" "$url" >"$out" 2>&1
    if grep -q 'Non-2xx' "$out"; then
        echo "$name: error replies:" >&2
        cat "$out" >&2
        return 1
    fi
    awk '/^Requests\/sec/ { rps = $2 }
         /^Transfer\/sec/ { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
                            f = (u == "GB") ? 1024 : (u == "MB") ? 1 : (u == "KB") ? 1 / 1024 : 1 / 1048576;
                            mib = v * f }
         END { printf "%.0f %.1f\n", rps, mib }' "$out"
}

# check_ranges NAME "<requests/s> <MiB/s>": every answer was one 1 MiB range (a 206), not the
# whole blob: range.lua has no response() callback to look at statuses (it would cost the
# client a copy of every body).
check_ranges() {
    if ! echo "$2" | awk '{ r = $2 / $1; exit !(r > 0.97 && r < 1.05) }'; then
        echo "$1: $2 (requests/s, MiB/s) is not one 1 MiB range per answer" >&2
        return 1
    fi
}

mf_make_model "$work/model.bin" $((blob_mb * 1048576)) bench
sha=$(sha256sum "$work/model.bin" | cut -c1-64)
export MF_SERVE_ARGS="${srv_threads:+--threads $srv_threads }--log-level warn --delta-worker 0 \
--device-rate 1000000 --device-burst 1000000 --conn-limit 1024 ${MF_BENCH_SERVE_ARGS:-}"

# bench_store LABEL: one mf-server (on MF_TEST_STORE_URL if set, else SQLite) with the model
# published and $devices devices enrolled; sets blob_LABEL and checkin_LABEL.
bench_store() {
    local label=$1 data="$work/$1" i cred
    mf_stack_start "$data" "$work/$label-server.log" || return 1
    mf_trust_setup "$work/$label-keys" >/dev/null
    mf_publish detector v1 "$work/model.bin" >/dev/null
    : >"$work/$label.creds"
    for i in $(seq 1 "$devices"); do
        cred=$(curl -s -X POST -H 'Content-Type: application/json' \
            --data "{\"enrollment_token\":\"$(cat "$MF_ENROLL_TOKEN_FILE")\",\"device_id\":\"dev-$i\"}" \
            "$MF_URL/v1/enroll" | python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])')
        echo "$cred" >>"$work/$label.creds"
    done
    cred=$(head -n 1 "$work/$label.creds")
    # One answer as the benchmark requests it: its size is what nginx serves statically.
    curl -s -H "Authorization: Bearer $cred" -H 'Content-Type: application/json' \
        --data "{\"nonce\":\"00112233445566778899aabbccddeeff\",\"root_version\":1,\"keys_version\":1,\"models\":[{\"name\":\"detector\",\"version\":\"v1\",\"sha256\":\"$sha\"}]}" \
        "$MF_URL/v1/checkin" >"$work/$label-checkin.json"
    grep -q '"assignment"' "$work/$label-checkin.json" || { echo "$label: no assignment" >&2; return 1; }
    blob=$(MF_PATH="/v1/blobs/$sha" MF_SIZE=$((blob_mb * 1048576)) MF_TOKEN=$cred \
        run_wrk "$label-blob" "$here/range.lua" "$MF_URL")
    check_ranges "$label-blob" "$blob" || return 1
    checkin=$(MF_CREDS="$work/$label.creds" MF_MODEL=detector MF_VERSION=v1 MF_SHA256=$sha \
        run_wrk "$label-checkin" "$here/checkin.lua" "$MF_URL")
    # The director's batch factor over the run (docs/formats/manifest.md §2.1), to stderr.
    echo "$label: director signatures $(mf_metric mf_director_signatures_total) for" \
        "$(mf_metric mf_director_assignments_signed_total) assignments" >&2
    eval "blob_$label='$blob'; checkin_$label='$checkin'"
    mf_stack_stop
}

# answer_bytes FILE CRED MODEL_ENTRY: one check-in answer into FILE (a fixed nonce, the
# device's trust current); prints "<body bytes> <header bytes>".
answer_bytes() {
    curl -s -o "$1" -w '%{size_download} %{size_header}\n' -H "Authorization: Bearer $2" \
        -H 'Content-Type: application/json' \
        --data "{\"nonce\":\"00112233445566778899aabbccddeeff\",\"root_version\":1,\"keys_version\":1,\"models\":[$3]}" \
        "$MF_URL/v1/checkin"
}

# release_digest FILE: the digest of the release envelope the answer in FILE carries.
release_digest() {
    python3 -c 'import base64, hashlib, json, sys
a = json.load(open(sys.argv[1]))["assignments"][0]
print(hashlib.sha256(base64.b64decode(json.loads(a["release"])["payload"])).hexdigest())' "$1"
}

# bench_bytes: bytes per check-in answer by model size (the release's chunk count), on
# SQLite: an older agent (no release_sha256) and a device naming the release it holds, each
# with nothing to do and with a new release to fetch. 4 MiB, 512 MiB and 3.5 GiB models at
# 1 MiB chunks have 4, 512 and 3584 chunk hashes; the benchmark makes releases of exactly
# those counts from 4 MiB / 4 MiB / 3.5 MiB files at 1 MiB / 8 KiB / 1 KiB chunks (a release
# names only size, chunk size and the hashes). Then wrk with the held release of the
# largest: answers per second and bytes per answer under load (batch signatures).
bench_bytes() {
    local data="$work/bytes" cred row label bytes cs m f1 f2 s1 s2 d1 b hdr=0
    mf_stack_start "$data" "$work/bytes-server.log" || return 1
    mf_trust_setup "$work/bytes-keys" >/dev/null
    cred=$(curl -s -X POST -H 'Content-Type: application/json' \
        --data "{\"enrollment_token\":\"$(cat "$MF_ENROLL_TOKEN_FILE")\",\"device_id\":\"dev-bytes\"}" \
        "$MF_URL/v1/enroll" | python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])')
    echo "$cred" >"$work/bytes.creds"
    printf '\n%-10s %7s | %-28s | %-28s\n' "model" "chunks" "older agent: same / new rel." "naming its release: same / new"
    for row in "4MiB:4194304:1048576" "512MiB:4194304:8192" "3.5GiB:3670016:1024"; do
        IFS=: read -r label bytes cs <<<"$row"
        m="m-${label/./_}"
        f1="$work/$m-v1.bin" f2="$work/$m-v2.bin"
        mf_make_model "$f1" "$bytes" "$m-1"
        mf_make_model "$f2" "$bytes" "$m-2"
        s1=$(sha256sum "$f1" | cut -c1-64)
        s2=$(sha256sum "$f2" | cut -c1-64)
        mf_publish "$m" v1 "$f1" --chunk-size "$cs" >/dev/null
        read -r old_same _ < <(answer_bytes "$work/$m-old.json" "$cred" \
            "{\"name\":\"$m\",\"version\":\"v1\",\"sha256\":\"$s1\"}")
        d1=$(release_digest "$work/$m-old.json")
        read -r held_same hdr < <(answer_bytes "$work/$m-held.json" "$cred" \
            "{\"name\":\"$m\",\"version\":\"v1\",\"sha256\":\"$s1\",\"release_sha256\":\"$d1\"}")
        grep -q '"release"' "$work/$m-held.json" && { echo "$m: the held release was sent" >&2; return 1; }
        mf_publish "$m" v2 "$f2" --chunk-size "$cs" >/dev/null
        mfctl_admin promote "$m" v2 --force >/dev/null
        read -r old_new _ < <(answer_bytes "$work/$m-oldnew.json" "$cred" \
            "{\"name\":\"$m\",\"version\":\"v1\",\"sha256\":\"$s1\"}")
        read -r held_new _ < <(answer_bytes "$work/$m-heldnew.json" "$cred" \
            "{\"name\":\"$m\",\"version\":\"v1\",\"sha256\":\"$s1\",\"release_sha256\":\"$d1\"}")
        grep -q '"release"' "$work/$m-heldnew.json" || { echo "$m: the new release was not sent" >&2; return 1; }
        printf '%-10s %7s | %12s / %-13s | %12s / %-13s\n' "$label" \
            "$(( (bytes + cs - 1) / cs ))" "$old_same" "$old_new" "$held_same" "$held_new"
    done
    # Under load: the largest model's device with nothing to do (its release is v2 now).
    d1=$(release_digest "$work/$m-heldnew.json")
    b=$(MF_CREDS="$work/bytes.creds" MF_MODEL=$m MF_VERSION=v2 MF_SHA256=$s2 MF_RELEASE=$d1 \
        run_wrk bytes-checkin "$here/checkin.lua" "$MF_URL")
    echo "answer bytes: the JSON body (HTTP headers add $hdr); under load, wrk -d${secs}s," \
        "$label naming its release:" \
        "$(echo "$b" | awk -v h="$hdr" '{ printf "%s check-ins/s, %.0f bytes per answer with headers (%.0f body)", $1, $2 * 1048576 / $1, $2 * 1048576 / $1 - h }')"
    echo "director signatures $(mf_metric mf_director_signatures_total) for" \
        "$(mf_metric mf_director_assignments_signed_total) assignments"
    mf_stack_stop
}

echo "bench: $(nproc) cores, wrk -t$wrk_threads -c$conns -d${secs}s, ${blob_mb} MiB blob, $devices devices, mf-server --threads ${srv_threads:-default}"
unset MF_TEST_STORE_URL
bench_bytes
[ "${MF_BENCH_ONLY:-}" = bytes ] && exit 0
bench_store sqlite

MF_PG_DURABLE=1 bash "$root/tests/pg/start.sh" "$work/pg" >/dev/null
pg_base=$(cat "$work/pg/url")
psql -q "$pg_base" -c "CREATE DATABASE mfbench" >/dev/null
MF_TEST_STORE_URL=$(printf '%s' "$pg_base" | sed -E 's#^(postgres(ql)?://[^/?]*)/[^?]*#\1/mfbench#')
export MF_TEST_STORE_URL
bench_store pg
unset MF_TEST_STORE_URL

# nginx: the same blob file (a hard link) and a static JSON file the size of a check-in answer.
mkdir -p "$work/www"
ln "$work/sqlite/blobs/${sha:0:2}/$sha" "$work/www/blob"
json_size=$(stat -c %s "$work/sqlite-checkin.json")
head -c "$json_size" "$work/sqlite-checkin.json" >"$work/www/checkin.json"
port=$(free_port)
nginx_conf="$work/nginx.conf"
user_line=""
[ "$(id -u)" -eq 0 ] && user_line="user root;"
cat >"$nginx_conf" <<CONF
$user_line
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    types { application/json json; }
    default_type application/octet-stream;
    server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
nginx -c "$nginx_conf" -p "$work"
for _ in $(seq 1 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
res=$(MF_PATH=/blob MF_SIZE=$((blob_mb * 1048576)) MF_TOKEN='' \
    run_wrk nginx-blob "$here/range.lua" "http://127.0.0.1:$port")
check_ranges nginx-blob "$res"
read -r nginx_blob_rps nginx_blob_mib <<<"$res"
res=$(run_wrk nginx-json "" "http://127.0.0.1:$port/checkin.json")
read -r nginx_json_rps nginx_json_mib <<<"$res"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
set -- $blob_sqlite
bs_rps=$1 bs_mib=$2
set -- $blob_pg
bp_rps=$1 bp_mib=$2
set -- $checkin_sqlite
cs_rps=$1
set -- $checkin_pg
cp_rps=$1
printf '\n%-44s %12s %10s %8s\n' "benchmark" "requests/s" "MiB/s" "ratio"
printf '%-44s %12s %10s %8s\n' "blob, 1 MiB ranges: nginx" "$nginx_blob_rps" "$nginx_blob_mib" "1.00"
printf '%-44s %12s %10s %8s\n' "blob, 1 MiB ranges: mf-server (SQLite)" "$bs_rps" "$bs_mib" "$(ratio "$bs_mib" "$nginx_blob_mib")"
printf '%-44s %12s %10s %8s\n' "blob, 1 MiB ranges: mf-server (PostgreSQL)" "$bp_rps" "$bp_mib" "$(ratio "$bp_mib" "$nginx_blob_mib")"
printf '%-44s %12s %10s %8s\n' "static JSON, $json_size B: nginx" "$nginx_json_rps" "$nginx_json_mib" "1.00"
printf '%-44s %12s %10s %8s\n' "check-in, $json_size B answer: mf-server (SQLite)" "$cs_rps" "-" "$(ratio "$cs_rps" "$nginx_json_rps")"
printf '%-44s %12s %10s %8s\n' "check-in, $json_size B answer: mf-server (PostgreSQL)" "$cp_rps" "-" "$(ratio "$cp_rps" "$nginx_json_rps")"
echo "targets: blob >= 0.90 x nginx; check-ins >= 0.30 x nginx static"
