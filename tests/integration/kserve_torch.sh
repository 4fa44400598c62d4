#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kserve connector against a real framework (docs/offload.md, "A PyTorch teacher over
# KServe v2"): examples/mnist/torch/kserve_server.py serves a PyTorch CNN (an untrained,
# narrow one here: the protocol is what this proves; training it is a documented command)
# on 127.0.0.1, and mf-server uses it as the teacher of model "fashion": devices' sync asks
# are answered by it and their samples labelled with its version, a distillation run's gate
# asks it about every held-out item, and the answers agree with the model server's own,
# image for image. Also the server's protocol edges: metadata, readiness, 400 for bad or
# unknown-keyed requests, 404 for an unknown model. Needs Debian's python3-torch
# (scripts/install-deps --torch); without it the test skips (fails under MF_TEST_NO_SKIP).
# Usage: kserve_torch.sh BIN_DIR   (ctest: integration_kserve_torch)
set -uo pipefail
BIN=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"
FM=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3 # Debian's Python: python3-torch and python3-numpy live there
mf_stack_scratch mf-kserve
ks_pid=""
trap '[ -n "$ks_pid" ] && kill "$ks_pid" 2>/dev/null; mf_stack_stop; rm -rf "$work"' EXIT

if ! "$PY" -c 'import torch' 2>/dev/null; then
    mf_skip "python3-torch is not installed (scripts/install-deps --torch)"
    exit $((MF_FAILED > 0))
fi

"$PY" "$root/examples/mnist/torch/kserve_server.py" --untrained --width 0.25 --seed 3 \
    --name fashion-cnn --port 0 --port-file "$work/ks.port" 2>"$work/ks.log" &
ks_pid=$!
for _ in $(seq 1 300); do # bounded: torch's import takes a few seconds on a busy machine
    [ -s "$work/ks.port" ] && break
    kill -0 "$ks_pid" 2>/dev/null || break
    sleep 0.1
done
check "the model server listens" test -s "$work/ks.port"
KS=http://127.0.0.1:$(cat "$work/ks.port" 2>/dev/null)
code() { curl -s -o "$work/body" -w '%{http_code}' "$@"; }
check "ready" test "$(code "$KS/v2/health/ready")" = 200
check "model metadata names its version" sh -c \
    "[ \"\$(curl -s $KS/v2/models/fashion-cnn)\" != '' ] && curl -s $KS/v2/models/fashion-cnn | grep -q '\"versions\": \[\"cnn-untrained-3\"\]'"
check "an unknown model is 404" test "$(code -d '{}' "$KS/v2/models/nosuch/infer")" = 404
check "an unknown request key is 400" test "$(code -d '{"inputs": [], "bogus": 1}' \
    "$KS/v2/models/fashion-cnn/infer")" = 400
check "a wrong shape is 400, named" sh -c "[ \"\$(curl -s -o $work/b2 -w '%{http_code}' \
    -d '{\"inputs\": [{\"name\": \"input\", \"shape\": [1, 3], \"datatype\": \"UINT8\", \"data\": [1, 2, 3]}]}' \
    $KS/v2/models/fashion-cnn/infer)\" = 400 ] && grep -q 'is not \[n, 784\]' $work/b2"

# mf-server with the model server as the teacher of "fashion" (kserve connector)
cat >"$work/offload.json" <<JSON
{"models": {"fashion": {
  "teacher": {"connector": "kserve", "url": "$KS", "name": "fashion-cnn", "input_name": "input",
              "datatype": "UINT8", "output": "probs", "timeout_ms": 5000, "concurrency": 4},
  "policy": {"enabled": true, "method": "max_softmax", "mode": "sync", "target_rate": 0.1}}}}
JSON
cat >"$work/distill.json" <<JSON
{"models": {"fashion": {
  "data": $(mf_fashion_data 9000 9300 0.02 300),
  "trainer": {"epochs": 1},
  "release": {"key": "$work/keys/release.pem"}}}}
JSON
MF_SERVE_ARGS="--offload-config $work/offload.json --distill-config $work/distill.json --device-rate 1000"
export MF_SERVE_ARGS
mf_stack_start "$work/server" "$work/server.log" || exit 1
mf_trust_setup "$work/keys" >/dev/null || exit 1

# devices' sync asks: answered through the connector, samples labelled with its version
stored=$(python3 "$root/tests/integration/distill_uplink.py" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" \
    $FM/train-images-idx3-ubyte.gz cam-1 100 20 none)
check "20 asks answered by the PyTorch teacher and stored" test "$stored" = 20
curl -s -H "Authorization: Bearer $(cat "$MF_ADMIN_TOKEN_FILE")" \
    "$MF_URL/v1/admin/samples?model=fashion" >"$work/samples.json"
check "the samples carry the model server's version" \
    test "$(grep -o '"teacher_version":"cnn-untrained-3"' "$work/samples.json" | wc -l)" = 20
# the connector's labels are the model server's own answers, image for image
"$PY" - "$work/samples.json" "$KS" >"$work/agree.out" 2>&1 <<'PY'
import base64, json, sys, urllib.request
samples = json.load(open(sys.argv[1]))["samples"]
x = [list(base64.b64decode(s["input"])) for s in samples]
req = {"inputs": [{"name": "input", "shape": [len(x), 784], "datatype": "UINT8",
                   "data": [v for row in x for v in row]}]}
r = urllib.request.urlopen(urllib.request.Request(sys.argv[2] + "/v2/models/fashion-cnn/infer",
        data=json.dumps(req).encode(), headers={"Content-Type": "application/json"}))
p = json.loads(r.read())["outputs"][0]["data"]
worst = max(abs(p[i * 10 + k] - s["teacher_output"][k])
            for i, s in enumerate(samples) for k in range(10))
print("%d samples, largest difference %.2g" % (len(samples), worst))
sys.exit(0 if len(samples) == 20 and worst < 1e-5 else 1)
PY
agree=$?
check "stored teacher outputs equal the model server's own answers ($(tail -n 1 "$work/agree.out"))" \
    test "$agree" = 0

# the loop's gate asks the PyTorch teacher about each held-out item
mfctl_admin distill run fashion >/dev/null
mfctl_admin distill wait 1 300 >"$work/run1.out" 2>&1
check "a distillation run gated with the PyTorch teacher publishes d1" \
    grep -q "run 1: fashion published (manual), parent -, version d1" "$work/run1.out"
check "its record shows the teacher's held-out accuracy from the model server" \
    grep -q "held-out (300 items), teacher" "$work/run1.out"
# the model server gone: the gate cannot judge, the run fails, nothing new is published
kill "$ks_pid" 2>/dev/null
wait "$ks_pid" 2>/dev/null
ks_pid=""
mfctl_admin distill run fashion >/dev/null
mfctl_admin distill wait 2 300 >"$work/run2.out" 2>&1
check "with the model server down the run fails at the gate" \
    grep -q "error: teacher on held-out item 0" "$work/run2.out"
check "... and d1 stays the only version" sh -c \
    "! $BIN/mfctl --server $MF_URL --token-file $MF_ADMIN_TOKEN_FILE versions fashion | grep -q ' d2 '"

echo "kserve_torch: $MF_PASSED passed, $MF_FAILED failed"
[ "$MF_FAILED" -eq 0 ]
