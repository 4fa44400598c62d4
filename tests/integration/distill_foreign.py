#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A model family the server knows nothing about, for the trainer and evaluator contracts
# (docs/distill.md): a nearest-centroid classifier on 7x7 mean-pooled images, its model file
# a JSON document. Python's standard library only (no numpy), so the suite needs nothing more.
#   distill_foreign.py train DIR       trainer contract: DIR/out/model.safetensors
#   distill_foreign.py eval DIR        evaluator contract: DIR/out/outputs.npy (float32 logits)
#   distill_foreign.py eval-garbage DIR   writes a file that is not .npy
import json
import struct
import sys

SIDE, POOL = 28, 4  # 28x28 images pooled 4x4 -> 7x7 features


def pooled(row):
    cells = SIDE // POOL
    out = [0.0] * (cells * cells)
    for r in range(SIDE):
        base = (r // POOL) * cells
        line = row[r * SIDE:(r + 1) * SIDE]
        for c in range(SIDE):
            out[base + c // POOL] += line[c]
    return [v / (POOL * POOL * 255.0) for v in out]


def train(d):
    job = json.load(open(d + "/job.json"))
    n, dim, k = job["n"], job["dim"], job["classes"]
    x = open(d + "/train_x.u8", "rb").read()
    y = open(d + "/train_y.u8", "rb").read()
    assert dim == SIDE * SIDE and len(x) == n * dim and len(y) == n
    sums = [[0.0] * 49 for _ in range(k)]
    counts = [0] * k
    for i in range(n):
        if y[i] == 255:  # an uplinked sample: no true label, this family ignores it
            continue
        f = pooled(x[i * dim:(i + 1) * dim])
        counts[y[i]] += 1
        sums[y[i]] = [a + b for a, b in zip(sums[y[i]], f)]
    cent = [[v / max(counts[c], 1) for v in sums[c]] for c in range(k)]
    print("foreign trainer: %d labelled rows" % sum(counts), file=sys.stderr)
    with open(d + "/out/model.safetensors", "w") as f:
        json.dump({"family": "centroid-7x7", "centroids": cent}, f)


def npy_u8(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY" and b[6] == 1
    hlen = struct.unpack("<H", b[8:10])[0]
    header = b[10:10 + hlen].decode("latin1")
    assert "'|u1'" in header
    return b[10 + hlen:]


def evaluate(d):
    job = json.load(open(d + "/job.json"))
    n, dim, k = job["n"], job["dim"], job["classes"]
    model = json.load(open(d + "/" + job["model"]))
    assert model["family"] == "centroid-7x7"
    cent = model["centroids"]
    x = npy_u8(d + "/" + job["inputs"])
    assert len(x) == n * dim
    out = []
    for i in range(n):
        f = pooled(x[i * dim:(i + 1) * dim])
        for c in range(k):
            out.append(-40.0 * sum((a - b) ** 2 for a, b in zip(f, cent[c])))
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, k)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    with open(d + "/" + job["outputs"], "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1"))
        f.write(struct.pack("<%df" % len(out), *out))
    print("foreign evaluator: %d items" % n, file=sys.stderr)


if __name__ == "__main__":
    mode, work = sys.argv[1], sys.argv[-1]
    if mode == "train":
        train(work)
    elif mode == "eval":
        evaluate(work)
    else:
        open(work + "/out/outputs.npy", "w").write("not an array\n")
