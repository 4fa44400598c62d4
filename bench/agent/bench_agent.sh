#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libmf / mf-agent benchmarks (issue 5; figures in docs/agent.md):
#   1. download throughput over loopback: `mf-agent run --once` installing a SIZE_MIB model
#      (check-in, trust chain, the signed chunk hashes: each byte hashed once, write, fsync,
#      atomic switch) against `curl` fetching the same blob from the same mf-server into a
#      file, as a ratio, with the agent's CPU time; before it the device SHA-256 alone
#      (bench_sha256: SHA-NI or portable, the portable fallback, mbedTLS);
#   2. resume overhead: tests/soak/agent_crash.sh with KILLS random kill -9s (bytes received
#      but unverified at each kill, which the resume fetches again; target <= one chunk);
#   3. size of libmf: the stripped static libraries an app links (mf_agent and its in-tree
#      dependencies), and the text of the agent code in a linked program.
# Usage: bench_agent.sh BUILD_DIR [SIZE_MIB=256] [RUNS=3] [KILLS=50]
set -uo pipefail
BUILD=$(cd "$1" && pwd)
BIN=$BUILD/bin
SIZE_MIB=${2:-256}
RUNS=${3:-3}
KILLS=${4:-50}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
work=$(mktemp -d /tmp/mf-bench-agent.XXXXXX)
trap 'mf_stack_stop; rm -rf "$work"' EXIT

now() { date +%s.%N; }
mf_stack_start "$work/server" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" || exit 1
mf_make_model "$work/model.bin" $((SIZE_MIB * 1024 * 1024)) bench || exit 1
mf_publish detector v1 "$work/model.bin" >/dev/null || exit 1
sha=$(sha256sum <"$work/model.bin" | cut -c1-64)

echo "== 1. download throughput, $SIZE_MIB MiB over loopback, best of $RUNS"
[ -x "$BIN/bench_sha256" ] && "$BIN/bench_sha256" "$SIZE_MIB"
best_agent=999999 best_curl=999999
for i in $(seq 1 "$RUNS"); do
    rm -rf "$work/dev$i"
    mkdir -p "$work/dev$i"
    mf_agent_config "$work/dev$i.json" "bench$i" "$work/dev$i" "$MF_ENROLL_TOKEN_FILE" detector
    t0=$(now)
    /usr/bin/time -f "%U %S" -o "$work/cpu$i" \
        "$BIN/mf-agent" --config "$work/dev$i.json" run --once >"$work/agent$i.log" 2>&1 ||
        { echo "agent run failed"; tail "$work/agent$i.log"; exit 1; }
    t1=$(now)
    cmp -s "$(mf_active_path "$work/dev$i" detector)" "$work/model.bin" || { echo "bad install"; exit 1; }
    cred=$(cat "$work/dev$i/credential")
    t2=$(now)
    curl -sf -H "Authorization: Bearer $cred" -o "$work/curl.bin" "$MF_URL/v1/blobs/$sha" ||
        { echo "curl failed"; exit 1; }
    t3=$(now)
    a=$(echo "$t1 - $t0" | bc -l)
    c=$(echo "$t3 - $t2" | bc -l)
    read -r cu cs <"$work/cpu$i"
    printf "run %d: mf-agent %.3f s (%.0f MiB/s; cpu user %s s sys %s s), curl %.3f s (%.0f MiB/s)\n" \
        "$i" "$a" "$(echo "$SIZE_MIB / $a" | bc -l)" "$cu" "$cs" "$c" "$(echo "$SIZE_MIB / $c" | bc -l)"
    [ "$(echo "$a < $best_agent" | bc)" = 1 ] && best_agent=$a
    [ "$(echo "$c < $best_curl" | bc)" = 1 ] && best_curl=$c
    rm -rf "$work/dev$i" "$work/curl.bin"
done
printf "best: mf-agent %.0f MiB/s, curl %.0f MiB/s, ratio mf-agent/curl throughput %.2f\n" \
    "$(echo "$SIZE_MIB / $best_agent" | bc -l)" "$(echo "$SIZE_MIB / $best_curl" | bc -l)" \
    "$(echo "$best_curl / $best_agent" | bc -l)"
mf_stack_stop

echo "== 2. resume overhead, $KILLS kill -9s (tests/soak/agent_crash.sh)"
bash "$root/tests/soak/agent_crash.sh" "$BIN" "$KILLS" | grep -v '^ok'

echo "== 3. size of libmf (stripped static libraries)"
total=0
for lib in sdk/agent/libmf_agent.a sdk/agent/libmf_http.a sdk/libmf_core.a \
    sdk/digest/libmf_digest.a diff/libmf_diff_apply.a diff/libmf_diff_common.a \
    manifests/libmf_manifest_verify.a manifests/libmf_manifest_common.a; do
    f=$(find "$BUILD" -path "*/$lib" | head -1)
    [ -n "$f" ] || { echo "missing $lib"; continue; }
    cp "$f" "$work/strip.a"
    strip --strip-unneeded "$work/strip.a" 2>/dev/null
    s=$(stat -c %s "$work/strip.a")
    total=$((total + s))
    printf "  %-40s %8d bytes\n" "$(basename "$f")" "$s"
done
echo "  total                                    $total bytes (plus libcurl, mbedTLS, zstd, cJSON)"
cp "$BIN/mf-agent" "$work/mf-agent" && strip "$work/mf-agent"
echo "  mf-agent (stripped, statically linked libmf): $(stat -c %s "$work/mf-agent") bytes"
