#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Crash consistency of mf-agent (issue 5): the real mf-agent against the real mf-server on
# 127.0.0.1, killed with SIGKILL at random moments while it downloads (full blobs and
# deltas, with a bandwidth cap so a transfer spans many kill points), applies a delta and
# installs. After every kill it checks that the device has a valid, verified active model
# (the active slot's bytes hash to the sha256 its state file names, and are one of the
# published versions); then it restarts the agent, until the update completes.
# Bytes fetched again are measured per resume: the .part's size when the agent died minus
# the offset the next run resumes at (from its log).
# Usage: agent_crash.sh BIN_DIR [KILLS [SIZE_MIB]]
#   (ctest: 12 kills of an 8 MiB model; the soak: the full 200 of 24 MiB)
set -uo pipefail
BIN=$1
KILLS=${2:-200}
SIZE_MIB=${3:-24}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

work=$(mktemp -d /tmp/mf-crash.XXXXXX)
agent_pid=""
cleanup() {
    [ -n "$agent_pid" ] && kill -KILL "$agent_pid" 2>/dev/null
    mf_stack_stop
    rm -rf "$work"
}
trap cleanup EXIT
SIZE=$((SIZE_MIB * 1024 * 1024))
CAP=$((32 * 1024 * 1024)) # bytes/s: a 24 MiB download takes ~0.8 s, its delta apply ~0.3 s

metric() {
    curl -s -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" "$MF_URL/metrics" |
        sed -n "s/^$1 \([0-9]*\)\$/\1/p"
}
# The invariant after any kill: the active slot holds exactly what state.json says, and that
# is a published version (or nothing was ever installed).
valid_active() {
    local state=$1/models/detector/state.json sha file
    [ -f "$state" ] || return 0
    sha=$(sed -n 's/.*"active":{[^}]*"sha256":"\([0-9a-f]*\)".*/\1/p' "$state")
    file=$(mf_active_path "$1" detector)
    [ -n "$sha" ] && [ -n "$file" ] || return 1
    [ "$(sha256sum <"$file" | cut -c1-64)" = "$sha" ] || return 1
    grep -qx "$sha" "$work/published"
}
# Bytes of the full-download .part when the agent died: all it had received. The next run
# logs where it resumes ("resuming at N of ..."): the difference is fetched again.
part_at_kill() {
    local prog
    for prog in "$1"/models/detector/slot-?.part.prog; do
        [ -f "$prog" ] && [ -f "${prog%.prog}" ] && { stat -c %s "${prog%.prog}"; return; }
    done
    echo 0
}
phase_of() { # what was on storage when the agent died
    local d=$1/models/detector
    if ls "$d"/*.ckpt >/dev/null 2>&1; then echo apply
    elif ls "$d"/*.delta.prog >/dev/null 2>&1; then echo delta-download
    elif ls "$d"/*.part.prog >/dev/null 2>&1; then echo download
    elif ls "$d"/slot-?.part >/dev/null 2>&1; then echo install
    else echo other; fi
}

mf_stack_start "$work/server" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" || { echo "trust setup failed"; exit 1; }
mkdir -p "$work/dev"
mf_agent_config "$work/dev.json" dev1 "$work/dev" "$MF_ENROLL_TOKEN_FILE" detector
# Slow link: the bandwidth cap stretches every download over many kill points.
sed -i "s/\"log_level\": \"info\"/\"log_level\": \"info\", \"max_recv_bytes_per_s\": $CAP/" \
    "$work/dev.json"
: >"$work/published"
similar=0
publish() { # publish VERSION: mostly a small change of the last one (a delta), else new bytes
    local v=$1
    similar=0
    if [ -f "$work/last.bin" ] && [ $((RANDOM % 4)) -ne 0 ]; then
        similar=1
        cp "$work/last.bin" "$work/$v.bin"
        # rewrite 64 KiB in eight places: a fine-tune-sized change
        for off in 1 3 5 7 41 83 $((SIZE / 65536 / 2)) $((SIZE / 65536 - 1)); do
            head -c 65536 /dev/urandom |
                dd of="$work/$v.bin" bs=65536 seek="$off" conv=notrunc status=none
        done
    else
        mf_make_model "$work/$v.bin" "$SIZE" "crash-$v" || return 1
    fi
    cp "$work/$v.bin" "$work/last.bin"
    sha256sum <"$work/$v.bin" | cut -c1-64 >>"$work/published"
    mf_deploy detector "$v" "$work/$v.bin" >/dev/null
}
run_once() { "$BIN/mf-agent" --config "$work/dev.json" run --once >>"$work/agent.log" 2>&1; }

publish v1 || exit 1
run_once || { echo "first install failed"; tail "$work/agent.log"; exit 1; }

kills=0 bad=0 version=1 total_updates=0 lost=0 lost_max=0
pending_part=0 measured=0 deltas=0
# After a run: if the previous one was killed mid-download, how much it fetches again.
account_resume() {
    local at
    [ "$pending_part" -gt 0 ] || return 0
    at=$(grep -o 'resuming at [0-9]*' "$work/run.log" | head -1 | tr -cd '0-9')
    if [ -n "$at" ]; then
        l=$((pending_part - at))
        lost=$((lost + l))
        measured=$((measured + 1))
        [ "$l" -gt "$lost_max" ] && lost_max=$l
    fi
    pending_part=0
}
declare -A phases
while [ "$kills" -lt "$KILLS" ]; do
    version=$((version + 1))
    publish "v$version" || { echo "publish v$version failed"; exit 1; }
    if [ "$similar" = 1 ]; then # wait (bounded) for the server's delta job to store it
        for _ in $(seq 1 600); do # at most 60 s (sanitizer builds encode slowly)
            [ "$(metric mf_deltas_computed_total)" -gt "$deltas" ] && break
            sleep 0.1
        done
        deltas=$(metric mf_deltas_computed_total)
    fi
    runs=0
    k0=$kills
    : >"$work/agent.log"
    while :; do
        "$BIN/mf-agent" --config "$work/dev.json" run --once >"$work/run.log" 2>&1 &
        agent_pid=$!
        runs=$((runs + 1))
        # A random moment inside the run, a run may also finish first: within 1 s for a
        # full download of 24 MiB, 400 ms when a delta is applied (download, apply and
        # install are short), scaled by the model size. The window widens with each kill of the same update, so every update
        # completes however the dice fall (a resume re-verifies what is on storage first).
        window=$(((similar ? 400 : 1000) * SIZE_MIB / 24 * (4 + kills - k0) / 4 + 50))
        ms=$(((RANDOM * 32768 + RANDOM) % window))
        sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
        if kill -KILL "$agent_pid" 2>/dev/null; then
            wait "$agent_pid" 2>/dev/null
            agent_pid=""
            cat "$work/run.log" >>"$work/agent.log"
            account_resume
            pending_part=$(part_at_kill "$work/dev")
            kills=$((kills + 1))
            p=$(phase_of "$work/dev")
            phases[$p]=$((${phases[$p]:-0} + 1))
            if ! valid_active "$work/dev"; then
                bad=$((bad + 1))
                echo "FAIL - after kill $kills ($p): active model not valid"
            fi
            [ "$kills" -ge "$KILLS" ] && break
        else
            wait "$agent_pid"
            rc=$?
            agent_pid=""
            cat "$work/run.log" >>"$work/agent.log"
            account_resume
            [ "$rc" -eq 0 ] && break
        fi
    done
    # Finish the update (bounded: a stuck agent fails the test rather than loop forever).
    for _ in 1 2 3 4 5; do
        "$BIN/mf-agent" --config "$work/dev.json" run --once >"$work/run.log" 2>&1
        rc=$?
        cat "$work/run.log" >>"$work/agent.log"
        account_resume
        [ "$rc" -eq 0 ] && break
    done
    if ! cmp -s "$(mf_active_path "$work/dev" detector)" "$work/v$version.bin"; then
        bad=$((bad + 1))
        echo "FAIL - v$version not installed after the kills"
        tail -5 "$work/agent.log"
    fi
    total_updates=$((total_updates + 1))
done
echo "kills: $kills over $total_updates updates; by phase on storage:"
for p in "${!phases[@]}"; do echo "  $p: ${phases[$p]}"; done
echo "fetched again after a kill mid-download: $lost bytes over $measured resumes, $((lost / (measured > 0 ? measured : 1))) per resume, at most $lost_max (chunk: 1048576)"
echo "invalid active model after a kill or failed update: $bad"
[ "$bad" -eq 0 ]
