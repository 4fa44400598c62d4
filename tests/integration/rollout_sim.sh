#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rollouts on the real programs: mf-server on 127.0.0.1 (ephemeral port, SQLite) and mf-sim,
# a fleet of real libmf agents each with its own state directory, reporting per-version
# runtime figures (docs/rollouts.md). Every scenario starts from the fleet on v1, publishes
# v2 and starts a three-wave rollout (soak 1 s, 2 devices reporting, red lines relative to
# v1), then runs the fleet for bounded cycles:
#   good     v2 behaves like v1: every wave advances, the rollout is done, all run v2
#   p99      v2 has 2x the latency: halted in wave 0, the line recorded, all end on v1
#   memory   1.5x peak memory          health   failing health checks
#   offload  2.4x the offload rate     (each: halted in wave 0, the fleet ends on v1)
#   actions  pause keeps the wave, resume, manual rollback with 5 devices offline: the
#            others go back to v1 at once, the offline ones when they return
# Every scenario first checks that publishing v2 deploys nothing (the fleet stays on the
# promoted v1) and that plan typos and empty red lines are refused naming the key.
#   early     the rollout is created before any device has reported: it does not advance
#             (nor soak) on time alone; once the fleet runs it advances to done and v2 is
#             promoted
#   early_p99 the same, v2 at 2x latency: the canary's devices never ran v1 (no history),
#             it halts against the concurrent control group (devices outside the wave)
#   sustained     on a simulated clock (a minute per cycle), v2 is fine for its first
#                 minutes and throttles (4x latency, the device hot) from minute 5 after
#                 its activation: at 2 minutes the line "P99 from minute 10 <= 2500 us"
#                 waits; later it halts the rollout in wave 0, the squeezed canaries
#                 degrade (thermal) and, back on v1, restore; the fleet ends on v1
#   sustained_ok  the same rollout without the throttling advances to done: all on v2
#   class     two device classes (low-RAM cam-lite, accelerator cam-pro); v2 (the variant
#             cam-lite runs) throttles on cam-lite only: that class alone is halted and
#             goes back to v1, cam-pro stays on v2 through every wave to done; cam-pro's
#             memory-pressure squeeze degrades and restores its devices meanwhile
# Usage: rollout_sim.sh BIN_DIR SCENARIO   (ctest: integration_rollout_<scenario>)
set -uo pipefail
BIN=$1
scenario=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-rollout
devices=20
sim_classes=() # the device classes every run declares (the class scenario's)
if [ "$scenario" = class ]; then
    sim_classes=(--class "0-10:cam-lite,ram=256,storage=512,int8"
        --class "10-20:cam-pro,ram=2048,storage=8192,accel=npu,int8,fp16")
fi
sim() { # sim CYCLES [mf-sim options...]: run the fleet; its summary in $work/sim.out
    local cycles=$1
    shift
    "$BIN/mf-sim" --server "$MF_URL" --enroll-token-file "$MF_ENROLL_TOKEN_FILE" \
        --trust-root "$MF_ROOT_FILE" --state "$work/fleet" --model det --devices "$devices" \
        --cycles "$cycles" --interval-ms 250 --behave v1:lat=1000,mem=40M,offload=5 \
        --report "$work/report.txt" "${sim_classes[@]}" "$@" >"$work/sim.out" 2>>"$work/sim.log"
}
on() { grep -q "^version $1 devices $2\$" "$work/sim.out"; } # on VERSION N
class_on() { grep -q "^class $1 version $2 devices $3\$" "$work/sim.out"; } # class_on TAG V N
state_is() { mfctl_admin rollout status 1 --json | grep -q "\"state\":\"$1\""; }
# engine_rows KIND: the rollout engine's audit rows of rollout.KIND
engine_rows() { mfctl_admin audit --action "rollout.$1" | grep -c ' rollout-engine '; }
# metric_is LINE: /metrics has the exact series line LINE
metric_is() { # the whole page first: grep -q closing the pipe early fails curl (23)
    local page
    page=$(curl -fsS -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" "$MF_URL/metrics") &&
        grep -qxF "$1" <<<"$page"
}
# run_until STATE CYCLES [mf-sim options]: the fleet runs in 4-cycle rounds until the rollout
# reaches STATE or the rounds run out (bounded: CYCLES / 4 rounds).
run_until() {
    local want=$1 rounds=$(($2 / 4))
    shift 2
    for _ in $(seq 1 "$rounds"); do
        sim 4 "$@" || return 1
        state_is "$want" && return 0
    done
    return 1
}

mf_stack_start "$work/server" "$work/server.log" || exit 1
check "trust installed" mf_trust_setup "$work/keys"
mf_make_model "$work/v1.bin" 40000 1
mf_make_model "$work/v2.bin" 40000 2
check "v1 published" mf_publish det v1 "$work/v1.bin"
early=0
case $scenario in early | early_p99) early=1 ;; esac
if [ "$early" -eq 0 ]; then
    check "the fleet enrolls and installs v1" sim 3
    check "  ... all $devices devices on v1" on v1 "$devices"
fi
check "v2 published" mf_publish det v2 "$work/v2.bin"
check "  ... released, not promoted" sh -c "\"$BIN/mfctl\" --server $MF_URL \
    --token-file $MF_ADMIN_TOKEN_FILE versions det | grep -q ' v2 .*not promoted'"
if [ "$early" -eq 0 ]; then
    check "publish without a rollout leaves the fleet on v1" sim 3
    check "  ... all $devices devices still on v1" on v1 "$devices"
fi
cat >"$work/plan.json" <<'JSON'
{"soak_s": 1, "min_devices": 2,
 "waves": [{"percent": 10}, {"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "p99_latency_us", "relative": 1.5},
               {"metric": "peak_memory", "relative": 1.2},
               {"metric": "health_rollback_rate", "max": 0.1},
               {"metric": "offload_rate", "relative": 1.5}]}
JSON
echo '{"soak": 30, "waves": [{"percent": 100}], "red_lines": []}' >"$work/typo.json"
echo '{"soak_s": 30, "waves": [{"percent": 100}], "red_lines": []}' >"$work/nolines.json"
refused() { # refused PLAN TEXT: the create fails and its message names TEXT
    ! mfctl_admin rollout create det v2 "$1" >/dev/null 2>"$work/refused.err" &&
        grep -q "$2" "$work/refused.err"
}
check "a plan typo is refused naming the key (400)" refused "$work/typo.json" "unknown key 'soak'"
check "empty red_lines without allow_no_red_lines is refused" \
    refused "$work/nolines.json" "allow_no_red_lines"
check "mfctl promote without --force is refused" sh -c "! \"$BIN/mfctl\" --server $MF_URL \
    --token-file $MF_ADMIN_TOKEN_FILE promote det v2 2>/dev/null"
case $scenario in
actions)
    echo '{"soak_s": 3600, "waves": [{"percent": 100}], "allow_no_red_lines": true}' \
        >"$work/plan.json"
    ;;
sustained | sustained_ok)
    # "P99 after 10 minutes <= 2.5 ms" (docs/rollouts.md, "The scorecard").
    cat >"$work/plan.json" <<'JSON'
{"soak_s": 1, "min_devices": 2, "line_min_inferences": 40,
 "waves": [{"percent": 10}, {"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "sustained_p99_us", "after_min": 10, "max": 2500},
               {"metric": "health_rollback_rate", "max": 0.1}]}
JSON
    ;;
class)
    cat >"$work/plan.json" <<'JSON'
{"soak_s": 1, "min_devices": 2,
 "waves": [{"percent": 50}, {"percent": 100}],
 "red_lines": [{"metric": "p99_latency_us", "relative": 1.5},
               {"metric": "health_rollback_rate", "max": 0.1}]}
JSON
    ;;
esac
check "rollout of v2 created" mfctl_admin rollout create det v2 "$work/plan.json"
check "  ... running in wave 1 of its plan" state_is running
check "  ... previous is the promoted v1" sh -c "\"$BIN/mfctl\" --server $MF_URL \
    --token-file $MF_ADMIN_TOKEN_FILE rollout status 1 --json | grep -q '\"previous\":\"v1\"'"

halted_on() { # halted_on METRIC V2_BEHAVIOUR: the rollout halts on METRIC, the fleet ends on v1
    check "v2 ($2): the rollout halts" run_until halted 40 --behave "v2:$2"
    check "  ... in wave 0" sh -c "\"$BIN/mfctl\" --server $MF_URL --token-file \
        $MF_ADMIN_TOKEN_FILE rollout status 1 --json | grep -q '\"wave\":0,'"
    mfctl_admin rollout status 1 >"$work/status.txt"
    check "  ... the status view names the breached line" \
        grep -q "halted by: $1" "$work/status.txt"
    check "  ... and shows it BREACHED against its bound" grep -q "BREACHED" "$work/status.txt"
    check "  ... the halt is one log line with the line's numbers" \
        grep -q "event=rollout.halted rollout=1 model=det version=v2 .* detail=\"$1 " \
        "$work/server.log"
    check "  ... and one audit row of the rollout engine" test "$(engine_rows halted)" -eq 1
    check "  ... /metrics counts the breach by its line" \
        metric_is "mf_rollout_breaches{model=\"det\",line=\"$1\"} 1"
    check "  ... --watch returns 1 at once on a halted rollout" sh -c "! \"$BIN/mfctl\" \
        --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE rollout status 1 --watch \
        --interval 1 --timeout 5 >/dev/null 2>&1"
    check "  ... the fleet rollback to v1 is set" sh -c "\"$BIN/mfctl\" --server $MF_URL \
        --token-file $MF_ADMIN_TOKEN_FILE pins --json | grep -q '\"version\":\"v1\"'"
    check "  ... and the whole fleet ends on v1" sim 6 --behave "v2:$2"
    check "  ... all $devices devices" on v1 "$devices"
}

case $scenario in
good)
    check "v2 like v1: every wave advances to done" run_until done 60 \
        --behave v2:lat=1000,mem=40M,offload=5
    mfctl_admin rollout status 1 >"$work/status.txt"
    check "  ... two advances recorded" test "$(grep -c ' advanced ' "$work/status.txt")" -eq 2
    check "  ... no breach" sh -c "! grep -q 'halted by' '$work/status.txt'"
    check "  ... the status view has the whole plan and ISO 8601 times" sh -c "grep -q \
        '^plan: {\"soak_s\":1,\"min_devices\":2,.*offload_rate' '$work/status.txt' && grep -Eq \
        '^  20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z advanced ' '$work/status.txt'"
    check "  ... each advance is a log line" \
        test "$(grep -c 'event=rollout.advanced rollout=1 model=det' "$work/server.log")" -eq 2
    check "  ... and an audit row of the rollout engine" test "$(engine_rows advanced)" -eq 2
    check "  ... the creation is in the audit log with the token's answer" sh -c \
        "\"$BIN/mfctl\" --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE audit \
        --action 'POST /v1/admin/rollouts' | grep -q ' 201  POST /v1/admin/rollouts '"
    check "  ... and its request line in the log names the token by id" grep -Eq \
        'method=POST path=/v1/admin/rollouts status=201 .* admin=1 token=[0-9a-f]{16}' \
        "$work/server.log"
    check "  ... /metrics shows the rollout done" \
        metric_is 'mf_rollout_state{model="det",version="v2",state="done"} 1'
    check "  ... in its last wave" metric_is 'mf_rollout_wave{model="det",version="v2"} 2'
    check "  ... --watch returns 0 at once on a done rollout" \
        mfctl_admin rollout status 1 --watch --interval 1 --timeout 5
    check "  ... the fleet ends on v2" sim 4 --behave v2:lat=1000,mem=40M,offload=5
    check "  ... all $devices devices" on v2 "$devices"
    mfctl_admin versions stats det >"$work/stats.txt"
    check "versions stats lists both versions with P99" \
        sh -c "grep -q '^v1 ' '$work/stats.txt' && grep -q '^v2 ' '$work/stats.txt' && grep -q P99_US '$work/stats.txt'"
    check "  ... and v2 is promoted, the channel default" sh -c "\"$BIN/mfctl\" --server \
        $MF_URL --token-file $MF_ADMIN_TOKEN_FILE versions det | grep ' v2 ' | grep -qv 'not promoted'"
    ;;
early | early_p99)
    # Created before any device reported: a soak of 1 s passes many times over, nothing moves.
    sleep 4
    mfctl_admin rollout status 1 >"$work/status.txt"
    check "no reports: still in wave 1 after 4 s of a 1 s soak" \
        grep -q "state running  wave 1 of 3" "$work/status.txt"
    check "  ... the soak has not started" grep -q "waiting for devices" "$work/status.txt"
    check "  ... and every red line is waiting" \
        test "$(grep -c ' waiting (' "$work/status.txt")" -eq 4
    if [ "$scenario" = early ]; then
        check "the fleet runs: every wave advances to done" run_until done 60 \
            --behave v2:lat=1000,mem=40M,offload=5
        mfctl_admin rollout status 1 >"$work/status.txt"
        check "  ... each wave soaked from its evidence" \
            test "$(grep -c ' soaking ' "$work/status.txt")" -eq 3
        check "  ... v2 promoted: the fleet ends on v2" sim 4 --behave v2:lat=1000,mem=40M,offload=5
        check "  ... all $devices devices" on v2 "$devices"
    else
        halted_on p99_latency_us lat=2000,mem=40M,offload=5
        check "  ... judged against the concurrent control group" \
            grep -q "x control .* control [1-9][0-9]* devices" "$work/status.txt"
    fi
    ;;
p99)
    halted_on p99_latency_us lat=2000,mem=40M,offload=5
    mf_make_model "$work/v3.bin" 40000 3
    check "v3 published" mf_publish det v3 "$work/v3.bin"
    check "v3's rollout falls back to v1, never the halted v2" sh -c "\"$BIN/mfctl\" \
        --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE rollout create det v3 \
        '$work/plan.json' --json | grep -q '\"previous\":\"v1\"'"
    ;;
memory) halted_on peak_memory lat=1000,mem=60M,offload=5 ;;
health) halted_on health_rollback_rate lat=1000,mem=40M,offload=5,health=fail ;;
offload) halted_on offload_rate lat=1000,mem=40M,offload=12 ;;
sustained | sustained_ok)
    # A simulated minute per cycle (mf-sim --cycle-ms), 40 inferences a minute per device.
    clock=(--cycle-ms 60000 --inferences 40 --behave "v2:lat=1000,mem=40M,offload=5")
    squeeze=()
    [ "$scenario" = sustained ] && squeeze=(--squeeze "all:after=5,factor=4,version=v2")
    check "the canary installs v2 and runs it 2 simulated minutes" sim 3 "${clock[@]}" \
        "${squeeze[@]}"
    canary=$(sed -n 's/^version v2 devices \([0-9]*\)$/\1/p' "$work/sim.out")
    check "  ... on the canary's devices only (wave 0, 10 %)" test "${canary:-0}" -ge 2 -a \
        "${canary:-0}" -lt "$devices"
    mfctl_admin rollout status 1 >"$work/status.txt"
    check "  ... fine at 2 minutes: still running in wave 1 of 3" \
        grep -q "state running  wave 1 of 3" "$work/status.txt"
    check "  ... the line from minute 10 waits for evidence" grep -Eq \
        '^  sustained_p99_us@10 .* waiting \(canary: 0 of 2 devices' "$work/status.txt"
    # scorecard rows: METRIC VALUE us PREVIOUS us DEVICES PREV_DEVICES
    check "  ... while the first minutes' P99 is in bounds" awk '$1 == "sustained_p99_us@0" &&
        $2 + 0 > 0 && $2 + 0 <= 2500 && $(NF - 1) >= 2 { ok = 1 } END { exit !ok }' \
        "$work/status.txt"
    if [ "$scenario" = sustained ]; then
        check "minute 5 on: v2 throttles, the rollout halts" sim 30 "${clock[@]}" \
            "${squeeze[@]}"
        check "  ... halted" state_is halted
        mfctl_admin rollout status 1 >"$work/status.txt"
        check "  ... in wave 0" grep -q "state halted  wave 1 of 3" "$work/status.txt"
        check "  ... by the sustained line, BREACHED against its bound" sh -c "grep -q \
            'halted by: sustained_p99_us@10 .*> bound 2500' '$work/status.txt' && grep -Eq \
            '^  sustained_p99_us@10 .* BREACHED' '$work/status.txt'"
        check "  ... the squeezed canaries degraded when hot, once each, and back on v1 restored" \
            grep -q "^degrade switches $canary (memory 0 thermal $canary) restores $canary \
degraded now 0 " "$work/sim.out"
        check "  ... the fleet rollback to v1 is set" sh -c "\"$BIN/mfctl\" --server $MF_URL \
            --token-file $MF_ADMIN_TOKEN_FILE pins --json | grep -q '\"version\":\"v1\"'"
        check "  ... the whole fleet ends on v1" sim 4 "${clock[@]}" "${squeeze[@]}"
        check "  ... all $devices devices" on v1 "$devices"
        check "  ... the canaries stay restored across the restart (no switch at all)" \
            grep -q "^degrade switches 0 (memory 0 thermal 0) restores 0 degraded now 0 " \
            "$work/sim.out"
    else
        # Each wave needs 10 simulated minutes of its own devices on v2 and then a real 1 s
        # soak (4 cycles of 250 ms on an idle machine): about 45 cycles for the three waves.
        check "no throttling: every wave advances to done" sim 60 "${clock[@]}"
        check "  ... done" state_is done
        mfctl_admin rollout status 1 >"$work/status.txt"
        check "  ... two advances, no breach" sh -c "test \"\$(grep -c ' advanced ' \
            '$work/status.txt')\" -eq 2 && ! grep -q 'halted by' '$work/status.txt'"
        check "  ... the line from minute 10 evaluated clean" grep -Eq \
            '^  sustained_p99_us@10 .* ok$' "$work/status.txt"
        check "  ... the fleet ends on v2" sim 4 "${clock[@]}"
        check "  ... all $devices devices" on v2 "$devices"
    fi
    ;;
class)
    # The fleet declared its classes from its first run (sim_classes), all on v1 so far.
    # cam-lite's v2 (the variant it runs) throttles from its minute 2: the class's own
    # reports breach, after clean ones, so the class has evidence before the fleet could
    # see the breach without it. cam-pro is squeezed for memory in minutes 2-3.
    fleet=(--cycle-ms 60000 --behave "v2:lat=1000,mem=40M,offload=5"
        --squeeze "@cam-lite:after=2,factor=4,version=v2" --squeeze "@cam-pro:mem=2-4")
    check "  ... cam-lite's 10 on v1" class_on cam-lite v1 10
    check "  ... cam-pro's 10 on v1" class_on cam-pro v1 10
    check "v2 throttles on cam-lite only: the rollout runs" sim 30 "${fleet[@]}"
    check "  ... to done for the fleet" state_is done
    mfctl_admin rollout status 1 >"$work/status.txt"
    check "  ... with cam-lite halted alone, back on v1" \
        grep -q "^classes halted (back on v1): cam-lite\$" "$work/status.txt"
    check "  ... no fleet halt" sh -c "! grep -q 'halted by' '$work/status.txt'"
    check "  ... each class's own scorecard: cam-pro's, and cam-lite's marked halted" sh -c \
        "grep -q '^class cam-pro (v2 vs v1):\$' '$work/status.txt' &&
         grep -q '^class cam-lite (halted) (v2 vs v1):\$' '$work/status.txt'"
    check "  ... the class halt is one event naming the class and its line" grep -q \
        "event=rollout.class_halted rollout=1 model=det version=v2 .*class cam-lite back to v1: p99_latency_us " \
        "$work/server.log"
    check "  ... and one audit row of the rollout engine" test "$(engine_rows class_halted)" -eq 1
    check "  ... cam-lite's devices all back on v1" class_on cam-lite v1 10
    check "  ... cam-pro's all on v2" class_on cam-pro v2 10
    check "  ... cam-pro degraded under memory pressure and restored" awk '$1 == "degrade" &&
        $5 >= 10 && $9 >= 10 { ok = 1 } END { exit !ok }' "$work/sim.out"
    check "  ... cam-lite degraded when hot" awk '$1 == "degrade" && $7 + 0 >= 1 { ok = 1 }
        END { exit !ok }' "$work/sim.out"
    check "v2 promoted: the classes stay where they are" sim 4 "${fleet[@]}"
    check "  ... cam-lite on v1" class_on cam-lite v1 10
    check "  ... cam-pro on v2" class_on cam-pro v2 10
    ;;
actions)
    good=v2:lat=1000,mem=40M,offload=5
    check "wave 0 (100 %) takes v2" sim 4 --behave "$good"
    check "  ... all $devices devices on v2" on v2 "$devices"
    check "pause" mfctl_admin rollout pause 1
    check "  ... paused" state_is paused
    check "pause again is refused (409)" sh -c "! \"$BIN/mfctl\" --server $MF_URL \
        --token-file $MF_ADMIN_TOKEN_FILE rollout pause 1 2>/dev/null"
    check "resume" mfctl_admin rollout resume 1
    check "  ... running" state_is running
    check "manual fleet rollback" mfctl_admin rollout rollback 1
    check "  ... rolled_back" state_is rolled_back
    check "devices 0-4 offline: the others go back to v1" sim 4 --behave "$good" \
        --offline 0-5:0-100
    check "  ... 15 on v1, 5 still on v2" sh -c "grep -q '^version v1 devices 15\$' \
        '$work/sim.out' && grep -q '^version v2 devices 5\$' '$work/sim.out'"
    check "  ... the offline ones are sim-00000..4" sh -c "grep -c 'v2\$' '$work/report.txt' \
        | grep -qx 5 && grep -q '^sim-00004 v2\$' '$work/report.txt'"
    check "the offline devices return and converge" sim 4 --behave "$good"
    check "  ... all $devices devices on v1" on v1 "$devices"
    ;;
*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
echo "$MF_PASSED passed, $MF_FAILED failed"
if [ "$MF_FAILED" -ne 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
    echo "--- mf-sim log (tail)"; tail -20 "$work/sim.log"
    echo "--- last mf-sim summary"; cat "$work/sim.out"
    mfctl_admin rollout status 1
    exit 1
fi
