#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A rollout on a fleet of plain mf-agent daemons (docs/agent.md, "What a rollout needs from
# devices"): real mf-server on 127.0.0.1 (ephemeral port, SQLite), six real `mf-agent run`
# processes with default reporting, and mfctl. The daemons are configured to poll once an
# hour; only the poll interval ops set for their group (`mfctl groups set-poll`) makes them
# check in every second, so the rollout reaching them also proves that the group's setting
# wins over the device's own. An "app" records inference latencies with `mf-agent record`.
# The rollout (canary group of two, then everyone; soak 1 s; red lines on health, install
# failures and relative P99) must advance through both waves on the agents' own reports
# and end with every device on v2. One device sits in a group whose install window is
# closed: it downloads v2, shows pending_install in `mfctl devices`, and installs once ops
# clear the window.
# Usage: rollout_agents.sh BIN_DIR   (ctest: integration_rollout_agents)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-rollout-agents
n=6
pids=()
stop_agents() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null
    done
    pids=()
}
trap 'stop_agents; mf_stack_stop; rm -rf "$work"' EXIT

conf() { echo "$work/agent-$1.json"; }
agent() { # agent I ARGS...: one mf-agent command of device agent-I
    "$BIN/mf-agent" --config "$(conf "$1")" "${@:2}" >>"$work/agent-$1.log" 2>&1
}
# runs VERSION N: N devices' last report is "installed" VERSION.
runs() {
    [ "$(mfctl_admin devices | grep -Ec " det +$1 +installed")" -eq "$2" ]
}
state_is() { mfctl_admin rollout status 1 --json | grep -q "\"state\":\"$1\""; }
# until_ok SECONDS CMD...: CMD succeeds within SECONDS (polled every 0.5 s).
until_ok() {
    local t=$(($1 * 2))
    shift
    for _ in $(seq 1 "$t"); do
        "$@" && return 0
        sleep 0.5
    done
    return 1
}
# app_records: what an app on each device measured since the last call (~1 ms inferences).
# 40 a call: a red line counts clean only on 100 inferences of each group (the plan's default
# line_min_inferences), so a canary of two devices needs a few calls before it may advance.
lat=$(printf '900,1000,1100,1000,%.0s' $(seq 1 10))
lat=${lat%,}
app_records() {
    local i
    for i in $(seq 0 $((n - 1))); do
        agent "$i" record det "latency_us=$lat" || return 1
    done
}
wave_is() { # wave_is N: rollout 1 is at wave N (0-based)
    "$BIN/mfctl" --server "$MF_URL" --token-file "$MF_ADMIN_TOKEN_FILE" rollout status 1 --json |
        grep -q "\"wave\":$1,"
}
records_until() { # records_until STATE: the apps keep recording until the rollout is STATE
    app_records && state_is "$1"
}
records_then() { # records_then CHECK...: the apps record, then CHECK
    app_records && "$@"
}

mf_stack_start "$work/server" "$work/server.log" || exit 1
check "trust installed" mf_trust_setup "$work/keys"
mf_make_model "$work/v1.bin" 30000 1
mf_make_model "$work/v2.bin" 30000 2
check "v1 published" mf_publish det v1 "$work/v1.bin"
for i in $(seq 0 $((n - 1))); do
    mkdir -p "$work/agent-$i"
    mf_agent_config "$(conf "$i")" "agent-$i" "$work/agent-$i" "$MF_ENROLL_TOKEN_FILE" det
    # An hour between check-ins unless the server's group setting says otherwise.
    sed -i 's/"poll_interval_s": 1,/"poll_interval_s": 3600,/' "$(conf "$i")"
done
check "the agents enroll and install v1 (one step each)" \
    bash -c "for i in \$(seq 0 $((n - 1))); do '$BIN/mf-agent' --config '$work'/agent-\$i.json \
        run --once >>'$work'/agent-\$i.log 2>&1 || exit 1; done"
check "  ... all $n on v1" runs v1 "$n"
check "devices 0 and 1 in groups canary and fleet, the rest in fleet" sh -c "
    for i in 0 1; do \"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE \
        device groups agent-\$i canary,fleet >/dev/null || exit 1; done
    for i in 2 3 4; do \"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE \
        device groups agent-\$i fleet >/dev/null || exit 1; done
    \"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE \
        device groups agent-5 fleet,night >/dev/null"
check "groups set-poll fleet 1 (no jitter)" mfctl_admin groups set-poll fleet 1 0
check "  ... a group with no device is 404" sh -c "! \"$BIN/mfctl\" --server $MF_URL \
    --token-file $MF_ADMIN_TOKEN_FILE groups set-poll nobody 5 2>'$work/nobody.err'"
check "  ... naming it" grep -q "unknown group 'nobody'" "$work/nobody.err"
# A window that is closed now: two hours from now, one hour long (UTC).
now_min=$((10#$(date -u +%H) * 60 + 10#$(date -u +%M)))
ws=$(((now_min + 120) % 1440))
we=$(((now_min + 180) % 1440))
window=$(printf '%02d:%02d-%02d:%02d' $((ws / 60)) $((ws % 60)) $((we / 60)) $((we % 60)))
check "groups set-window night $window" mfctl_admin groups set-window night "$window"
check "groups settings lists both" sh -c "\"$BIN/mfctl\" --server $MF_URL --token-file \
    $MF_ADMIN_TOKEN_FILE groups settings | grep -q '^fleet .*1 s +-0%' && \"$BIN/mfctl\" \
    --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE groups settings | grep -q \"^night .*$window UTC+00:00\""
check "the apps record v1's latencies" app_records
check "  ... and a health check" agent 0 record det health=ok
for bad in latency_us=abc latency_us=5,,6 latency_us=0 memory=-1 health=maybe bogus=1 latency_us; do
    check "record $bad: usage error (2) naming it" sh -c "\"$BIN/mf-agent\" --config \
        '$(conf 0)' record det '$bad' 2>'$work/bad.err'; test \$? -eq 2 && grep -q 'record: ' '$work/bad.err'"
done
check "record for an untracked model fails (1)" sh -c "\"$BIN/mf-agent\" --config '$(conf 0)' \
    record other latency_us=5 2>/dev/null; test \$? -eq 1"
sed 's/"log_level": "info"/"log_level": "info", "report_telemetry": false/' "$(conf 0)" \
    >"$work/quiet.json"
check "record with report_telemetry false fails (1), naming the key" sh -c "\"$BIN/mf-agent\" \
    --config '$work/quiet.json' record det latency_us=5 2>'$work/quiet.err'; test \$? -eq 1 && \
    grep -q 'report_telemetry' '$work/quiet.err'"

for i in $(seq 0 $((n - 1))); do
    "$BIN/mf-agent" --config "$(conf "$i")" run >>"$work/agent-$i.log" 2>&1 &
    pids+=($!)
done
check "v2 published" mf_publish det v2 "$work/v2.bin"
# Published is not deployed: three poll intervals later every agent still runs v1.
sleep 3
check "  ... and not deployed: all $n still on v1" runs v1 "$n"
cat >"$work/plan.json" <<'JSON'
{"soak_s": 1, "min_devices": 2,
 "waves": [{"group": "canary"}, {"percent": 100}],
 "red_lines": [{"metric": "health_rollback_rate", "max": 0.1},
               {"metric": "install_failure_rate", "max": 0.1},
               {"metric": "p99_latency_us", "relative": 1.5}]}
JSON
check "rollout of v2 created" mfctl_admin rollout create det v2 "$work/plan.json"
check "the canaries install v2 and report; the rollout advances to wave 1" \
    until_ok 60 records_then wave_is 1
check "  ... only on what the agents reported (install, health)" sh -c "\"$BIN/mfctl\" \
    --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE rollout status 1 | grep -q ' advanced '"
check "every wave clean: the rollout is done" until_ok 60 records_until "done"
mfctl_admin rollout status 1 >"$work/status.txt"
check "  ... one advance recorded, no breach" sh -c "test \"\$(grep -c ' advanced ' \
    '$work/status.txt')\" -eq 1 && ! grep -q 'halted by' '$work/status.txt'"
check "  ... five devices run v2" until_ok 30 runs v2 5
# The device list: RUNNING v1, STATUS pending_install, DETAIL naming v2.
check "the device in the closed window downloaded v2 and waits: pending_install" \
    until_ok 30 sh -c "\"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE \
        devices | grep -Eq 'agent-5 +.* det +v1 +pending_install +- +v2: '"
check "  ... still running v1" cmp -s "$(mf_active_path "$work/agent-5" det)" "$work/v1.bin"
check "  ... the daemon logged why" grep -q "installs in the window $window UTC" \
    "$work/agent-5.log"
check "groups clear-window night" mfctl_admin groups clear-window night
check "  ... it installs v2: all $n on v2" until_ok 30 runs v2 "$n"
check "  ... the bytes of v2" cmp -s "$(mf_active_path "$work/agent-5" det)" "$work/v2.bin"
# The last install's report rides that device's next check-in, a second later.
check "reports by default: v2's stats count every device, none unhealthy" until_ok 30 \
    sh -c "\"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE versions stats det --json | tr -d ' ' | \
    grep -q '\"version\":\"v2\",\"devices_running\":$n,\"devices_reporting\":$n,\"install_ok\":$n,\"install_failed\":0,\"unhealthy_devices\":0'"
stop_agents

echo "$MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    for i in 0 5; do echo "--- agent-$i log (tail)"; tail -15 "$work/agent-$i.log"; done
    mfctl_admin rollout status 1
    mfctl_admin devices
    exit 1
fi
