#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/loop/targets.sh (Debian's /usr/bin/python3 with python3-torch/numpy).

  targets_pick.py pick STUDENT FIRST POOL NEW hard|random SEED OUT
      which NEW of the Fashion-MNIST train images FIRST..FIRST+POOL-1 a device offloads:
      hard = the NEW the int8 student (its reference inference, student_trainer.py) is
      least sure of (max-softmax), the uncertain share of a 10 % target at NEW = POOL / 10;
      random = NEW drawn uniformly (the same budget, no selection). OUT: one index a line.
  targets_pick.py teacher WEIGHTS
      the PyTorch CNN teacher's accuracy on the held-out test items 5000-9999, in percent.
  targets_pick.py teacher-mlp TEACHER.safetensors
      the same for the built-in C teacher's float MLP (mf-float-mlp, numpy float32).
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "mnist", "torch"))
FM = "/usr/share/datasets/fashion-mnist"


def pick(student, first, pool, new, mode, seed, out):
    import student_trainer as st

    x = st.load_idx_images(FM + "/train-images-idx3-ubyte.gz")[first:first + pool]
    if mode == "hard":
        tensors, meta = st.st_read(student)
        z = st.ref_logits(tensors, st.family_of(meta), x).astype(np.float64)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        conf = (p / p.sum(axis=1, keepdims=True)).max(axis=1)
        chosen = np.argsort(conf, kind="stable")[:new]
    else:
        chosen = np.random.default_rng(seed).choice(len(x), new, replace=False)
    with open(out, "w") as f:
        f.writelines("%d\n" % (first + i) for i in sorted(chosen))


def teacher(weights):
    import torch
    import fashion_cnn

    torch.set_num_threads(2)
    model, _ = fashion_cnn.load(weights)
    x, y = fashion_cnn.load_idx(FM + "/t10k-images-idx3-ubyte.gz", FM + "/t10k-labels-idx1-ubyte.gz")
    print("%.2f" % (100 * fashion_cnn.accuracy(model, x[5000:], y[5000:])))


def heldout():
    import student_trainer as st

    x = st.load_idx_images(FM + "/t10k-images-idx3-ubyte.gz")[5000:]
    with open(FM + "/t10k-labels-idx1-ubyte.gz", "rb") as f:
        import gzip
        y = np.frombuffer(gzip.decompress(f.read())[8:], np.uint8)[5000:]
    return x, y


def teacher_mlp(path):
    import student_trainer as st

    t, _ = st.st_read(path)
    x, y = heldout()
    h = x.astype(np.float32) * t["input_scale"][0]
    n = sum(1 for k in t if k.endswith(".weight"))
    for i in range(n):
        h = h @ t["layers.%d.weight" % i].T + t["layers.%d.bias" % i]
        if i < n - 1:
            h = np.maximum(h, 0)
    print("%.2f" % (100 * float((h.argmax(axis=1) == y).mean())))


if __name__ == "__main__":
    if sys.argv[1] == "pick":
        a = sys.argv[2:]
        pick(a[0], int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5]), a[6])
    elif sys.argv[1] == "teacher":
        teacher(sys.argv[2])
    elif sys.argv[1] == "teacher-mlp":
        teacher_mlp(sys.argv[2])
    else:
        sys.exit(__doc__)
