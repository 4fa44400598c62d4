#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hard samples from a device to the data team, on the real programs: mf-server on 127.0.0.1
# (ephemeral port, SQLite) with --offload-config naming a command teacher; the device
# library (test_offload_e2e_client: mf_offload on the POSIX port) enrols, checks in for its
# policy, asks 5 samples the teacher answers and queues 70 it uplinks in batches; the label
# job labels them; `mfctl samples export` writes samples.jsonl + .npy. The files are checked
# with plain shell tools always, and loaded with numpy and compared with what the device sent
# when a python3 with numpy is found (else that comparison is skipped, saying so). The
# WebDataset export (--format webdataset) is read back with Python's tarfile. Filters and
# `mfctl samples delete` close the loop.
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

# The teacher answers every sample with class 1 at 0.9; uncertain samples below 0.8 ask it.
mf_offload_config "$work" digits '[0.05, 0.9, 0.05]' 0.8
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

check "every line carries the policy's threshold (0.8)" \
    test "$(grep -c '"threshold":0.8,' "$out/samples.jsonl")" -eq "$n"

# WebDataset: one ustar archive, <id>.input.npy + <id>.json per sample, read by tarfile.
check "export --format webdataset" export_to "$work/wds" --format webdataset
check "  ... says where the archive is" grep -q "exported $n samples of digits to $work/wds/samples.tar" \
    "$work/export.out"
check "  ... writes only samples.tar" test "$(ls "$work/wds")" = samples.tar
check "python3 tarfile reads the archive: $n samples, each input and line as in the JSONL export" \
    python3 -c '
import hashlib, json, sys, tarfile
tar, jsonl = sys.argv[1], sys.argv[2]
lines = {json.loads(l)["id"]: json.loads(l) for l in open(jsonl)}
with tarfile.open(tar, "r:") as t:
    members = t.getmembers()
    assert all(m.isreg() for m in members)
    names = [m.name for m in members]
    assert len(names) == 2 * len(lines), (len(names), len(lines))
    for i in range(0, len(names), 2):
        key = names[i].split(".", 1)[0]  # the WebDataset key: the name up to its first dot
        assert names[i] == key + ".input.npy" and names[i + 1] == key + ".json", names[i:i + 2]
        raw = t.extractfile(members[i]).read()
        assert raw[:10] == b"\x93NUMPY\x01\x00\x76\x00" and b"(784,)" in raw[:128], raw[:128]
        x = raw[128:]
        meta = json.loads(t.extractfile(members[i + 1]).read())
        assert meta == lines[key] and meta["row"] == i // 2, (meta, lines[key])
        assert len(x) == 784 and hashlib.sha256(x).hexdigest() == meta["input_sha256"]
        assert meta["threshold"] == 0.8 and meta["teacher_label"] == 1
        assert members[i].mtime == meta["received_at"]
' "$work/wds/samples.tar" "$out/samples.jsonl"

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
