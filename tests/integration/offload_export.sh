#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hard samples from a device to the data team, on the real programs: mf-server on 127.0.0.1
# (ephemeral port, SQLite) with --offload-config naming a command teacher; the device
# library (test_offload_e2e_client: mf_offload on the POSIX port) enrols, checks in for its
# policy, asks 5 samples the teacher answers and queues 70 it uplinks in batches; the label
# job labels them; `mfctl samples export` writes samples.jsonl + .npy. The files are checked
# with plain shell tools always, and loaded with numpy and compared with what the device sent
# when a python3 with numpy is found (else that comparison is skipped, saying so). Filters
# and `mfctl samples delete` close the loop.
# Usage: offload_export.sh BIN_DIR CLIENT   (run by ctest as integration_offload_export)
set -uo pipefail
BIN=$1
CLIENT=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/stack.sh
. "$root/scripts/lib/stack.sh"

mf_stack_scratch mf-offexp
export_to() { # export_to DIR [OPTIONS...]
    local dir=$1
    shift
    mfctl_admin samples export --model digits "$@" "$dir" >"$work/export.out" 2>&1
}
n_sync=5
n_async=70
n=$((n_sync + n_async))

# The teacher: one process per call, sample JSON on stdin, probabilities on stdout.
cat >"$work/teacher.sh" <<'SH'
cat >/dev/null
echo '{"probs": [0.05, 0.9, 0.05], "version": "cmd-1"}'
SH
cat >"$work/offload.json" <<JSON
{"models": {"digits": {
  "teacher": {"connector": "command", "command": ["/bin/sh", "$work/teacher.sh"],
              "timeout_ms": 5000},
  "policy": {"enabled": true, "method": "max_softmax", "mode": "sync", "threshold": 0.8,
             "deadline_ms": 5000, "metered": "allow"}}}}
JSON
MF_SERVE_ARGS="--offload-config $work/offload.json" mf_stack_start "$work/server" \
    "$work/server.log" || exit 1

check "device library: $n_sync asked (teacher answers), $n_async queued and uplinked" \
    "$CLIENT" "$MF_URL" "$MF_ENROLL_TOKEN_FILE" "$work/dev" "$n_sync" "$n_async" "$work/sent.txt"
# The label job runs every 2 s; bounded wait (150 x 0.1 s) until every sample is labelled.
labelled() {
    export_to "$work/out" --min-teacher-confidence 0.85 &&
        [ "$(wc -l <"$work/out/samples.jsonl")" -eq "$n" ]
}
for _ in $(seq 1 150); do
    labelled && break
    sleep 0.1
done
check "export of the labelled samples holds all $n" labelled
check "  ... and says so" grep -q "exported $n samples of digits" "$work/export.out"
out=$work/out
npy_ok() { # npy_ok FILE SHAPE BYTES: magic, version 1.0, the shape, the size
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 934e554d50590100 ] &&
        head -c 128 "$1" | grep -qF "'shape': ($2), }" &&
        [ "$(stat -c %s "$1")" -eq "$3" ]
}
check "inputs.npy is uint8 [$n, 784]" npy_ok "$out/inputs.npy" "$n, 784" $((128 + n * 784))
check "  ... of dtype |u1" bash -c "head -c 128 '$out/inputs.npy' | grep -qF \"'descr': '|u1'\""
check "student.npy is float32 [$n, 3]" npy_ok "$out/student.npy" "$n, 3" $((128 + n * 12))
check "teacher.npy is float32 [$n, 3]" npy_ok "$out/teacher.npy" "$n, 3" $((128 + n * 12))
check "no offsets file for inputs of one length" test ! -e "$out/input_offsets.npy"
check "no .part file left" bash -c "! ls '$out' | grep -q '\.part$'"
check "every line is a labelled sample of cam-int" \
    test "$(grep -c '"device":"cam-int".*"teacher_version":"cmd-1"' "$out/samples.jsonl")" -eq "$n"
check "every sent input exported exactly once" \
    bash -c "diff <(cut -d' ' -f1 '$work/sent.txt' | sort) \
                  <(grep -o '\"input_sha256\":\"[0-9a-f]*\"' '$out/samples.jsonl' | cut -d'\"' -f4 | sort)"

numpy_python=""
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' 2>/dev/null; then
        numpy_python=$py
        break
    fi
done
if [ -n "$numpy_python" ]; then
    # The loader of docs/offload.md, then a row-by-row comparison with what the device sent.
    check "numpy loads the export and it equals what the device sent" "$numpy_python" -c '
import hashlib, json, sys
import numpy as np
d, sent_file = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(d + "/samples.jsonl")]
X, S, T = (np.load(d + "/" + f + ".npy") for f in ("inputs", "student", "teacher"))
sent = {}
for line in open(sent_file):
    h, *logits = line.split()
    sent[h] = np.array([float(v) for v in logits], dtype=np.float32)
assert X.dtype == np.uint8 and X.shape == (len(rows), 784), X.shape
assert S.dtype == T.dtype == np.float32 and S.shape == T.shape == (len(rows), 3)
assert len(rows) == len(sent), (len(rows), len(sent))
seen = set()
for i, r in enumerate(rows):
    h = hashlib.sha256(X[i].tobytes()).hexdigest()
    assert r["row"] == i and r["input_sha256"] == h and h in sent and h not in seen, i
    seen.add(h)
    assert np.array_equal(S[i], sent[h]), (i, S[i], sent[h])
    assert np.allclose(T[i], [0.05, 0.9, 0.05], atol=1e-7), T[i]
    assert r["teacher_version"] == "cmd-1" and r["device"] == "cam-int" and r["model"] == "digits"
    assert r["student_output"] == [float(v) for v in S[i]] or np.allclose(r["student_output"], S[i])
' "$out" "$work/sent.txt"
else
    mf_skip "no python3 with numpy: numpy comparison not run" || true
fi

# Filters: nothing is audit, nothing is newer than the future; deletion by device.
check "export --kind audit finds none" export_to "$work/audit" --kind audit
check "  ... an empty export (shape (0, 0))" npy_ok "$work/audit/inputs.npy" "0, 0" 128
check "export --since the future finds none" export_to "$work/future" --since 4102444800
check "  ... empty samples.jsonl" test ! -s "$work/future/samples.jsonl"
check "bad --kind is a usage error (exit 2)" bash -c \
    "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' samples export \
     --model digits --kind easy '$work/x' >/dev/null 2>&1; test \$? -eq 2"
check "mfctl samples delete --device cam-int" bash -c \
    "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' samples delete \
     --device cam-int | grep -q 'deleted $n samples of device cam-int'"
check "after deletion the export is empty" bash -c \
    "'$BIN/mfctl' --server '$MF_URL' --token-file '$MF_ADMIN_TOKEN_FILE' samples export \
     --model digits '$work/after' >/dev/null && test ! -s '$work/after/samples.jsonl'"

echo "offload_export: $MF_PASSED passed, $MF_FAILED failed"
[ "$MF_FAILED" -eq 0 ]
