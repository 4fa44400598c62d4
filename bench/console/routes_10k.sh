#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The console's admin routes against a fleet of N devices (default 10,000) on loopback
# (docs/console.md: "the page must stay fast with 10,000 devices"): mf-server on a SQLite
# store seeded directly (devices, what each runs, a runtime report per device under one of
# two device classes, a day of fleet bins, a rollout with a full red-line history of 512
# evaluations), then each route the console polls, timed with curl (the median of REPS).
# Usage: bench/console/routes_10k.sh BIN_DIR [DEVICES] [REPS]   (history: README.md here)
set -euo pipefail
BIN=$1 n=${2:-10000} reps=${3:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
mf_stack_scratch mf-bench-console
data=$work/server
"$BIN/mf-server" init --data-dir "$data" >"$work/server.log" 2>&1
now=$(date +%s)
sha1=$(printf '1%.0s' $(seq 64))
sha2=$(printf '2%.0s' $(seq 64))
report='{"version":"v1","inferences":1000,"latency_us":[[40,600],[80,400]],"peak_memory":4194304}'
# One transaction; recursive CTEs make the rows, so seeding 10,000 devices takes a second.
sqlite3 "$data/store.db" <<SQL
BEGIN;
INSERT INTO models(name, created_at) VALUES('det', $now);
INSERT INTO model_versions(model_id, version, sha256, size, created_at)
  VALUES(1, 'v1', '$sha1', 1000, $now), (1, 'v2', '$sha2', 1000, $now);
WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k + 1 < $n)
INSERT INTO devices(device_id, credential_hash, enrolled_at, last_seen, channel)
  SELECT printf('sim-%05d', k), randomblob(32), $now - 3600, $now - (k % 600), 'stable' FROM i;
INSERT INTO device_models(device_id, model, version, sha256, status, detail, reported_at)
  SELECT id, 'det', CASE WHEN id % 10 < 3 THEN 'v2' ELSE 'v1' END,
         CASE WHEN id % 10 < 3 THEN '$sha2' ELSE '$sha1' END, 'installed', '', $now FROM devices;
INSERT INTO telemetry(device_id, model, version, report, reported_at, device_class)
  SELECT device_id, 'det', 'v1', '$report', $now, CASE WHEN id % 2 THEN 'cam-pro' ELSE 'cam-lite' END
  FROM devices;
WITH RECURSIVE b(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM b WHERE k + 1 < 1440)
INSERT INTO fleet_versions(model, bin_at, version, devices)
  SELECT 'det', ($now / 60 - k) * 60, v, CASE v WHEN 'v1' THEN $n - k ELSE k END
  FROM b, (SELECT 'v1' AS v UNION ALL SELECT 'v2');
INSERT INTO rollouts(model, version, prev_version, state, wave, wave_started_at, created_at,
  updated_at, plan, breach) VALUES('det', 'v2', 'v1', 'running', 0, $now, $now - 3600, $now,
  '{"waves":[{"percent":10}],"red_lines":[{"metric":"p99_latency_us","relative":1.5}]}', '');
WITH RECURSIVE t(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM t WHERE k + 1 < 512)
INSERT INTO rollout_history(rollout_id, at, line, metric, kind, state, value, bound, control,
  devices, control_devices)
  SELECT 1, $now - 3600 + 7 * k, l, CASE l WHEN 0 THEN 'p99_latency_us' ELSE 'peak_memory' END,
         'relative', 'clean', 1000 + k, 1500, 1000, 1000, 9000 FROM t, (SELECT 0 AS l UNION ALL SELECT 1);
COMMIT;
SQL
MF_SERVE_ARGS="--delta-worker 0 --log-level warn" mf_stack_start "$data" "$work/server.log"
token=$(cat "$MF_ADMIN_TOKEN_FILE")
# time PATH: the median over REPS of curl's total time, in ms, and the body's size.
time_route() {
    local path=$1 t size
    for _ in $(seq 1 "$reps"); do
        curl -fsS -o "$work/body" -w '%{time_total}\n' -H "Authorization: Bearer $token" \
            "$MF_URL$path"
    done | sort -n | awk -v r="$reps" '{a[NR] = $1} END {printf "%.1f", a[int((r + 1) / 2)] * 1000}' >"$work/t"
    t=$(cat "$work/t")
    size=$(wc -c <"$work/body")
    printf '%-48s %8s ms %9s bytes\n' "$path" "$t" "$size"
}
echo "devices: $n, median of $reps, mf-server $(git -C "$root" rev-parse --short HEAD)"
for p in /v1/admin/fleet/summary '/v1/admin/fleet/devices?limit=50' \
    '/v1/admin/fleet/devices?limit=50&class=cam-pro' '/v1/admin/fleet/devices?limit=50&q=sim-099' \
    /v1/admin/models/det/installed /v1/admin/models/det/stats /v1/admin/rollouts/1/history \
    /v1/admin/rollouts/1 "/v1/admin/devices/$(printf 'sim-%05d' $((n * 4242 / 10000)))"; do
    time_route "$p"
done
