#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A PyTorch trainer on the distillation loop's trainer contract (docs/distill.md), for two
int8 student families a device runs in plain C:

  mlp  the example family (docs/example-model.md): int8 784-H-10, format mf-student-int8-mlp,
       decoded and evaluated by the server itself (models/mnist/student.c on devices);
  cnn  a family the server knows nothing about: conv 3x3 x8 (valid) - ReLU - 2x2 max-pool -
       fc 1352-10, format mf-student-int8-cnn, judged through the evaluator contract by
       mf-example-cnn-eval (examples/mnist/cnn_student.c, the C reference inference).

  /usr/bin/python3 student_trainer.py train [--family mlp|cnn] [--max-changed F] [--lr X] DIR
  /usr/bin/python3 student_trainer.py logits MODEL IMAGES.idx(.gz) OUT.f32
  /usr/bin/python3 student_trainer.py info MODEL

train: the loss is T^2 * KL(q || softmax(z / T)) on rows with the teacher's soft targets q
(already at the temperature T of job.json) plus cross-entropy on rows with a true label (the
seed set); every stored sample the run passes is trained on (the server replays all rounds'
samples up to samples.max, newest first). Warm start (job.json warm_start and a parent of the
same family): the float weights start from the parent's int8 weights times their scales.
Delta-aware (--max-changed F, warm start only): the parent's scales are kept and only the F
share of int8 weights that moved most take their new value (the others stay byte-equal to the
parent), so the patch a device downloads shrinks; the trainer reports the changed weights on
stderr. Post-training quantisation is symmetric per tensor; the hidden scale is the largest
first-layer value on the training inputs over 255 (as server/distill/distill_quant.c).
logits: the trainer's int8 reference (numpy, float32 arithmetic as the C code does it) on every
image, raw little-endian float32, so a test compares it with the C inference bit for bit.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import numpy as np
import torch
from torch import nn

F32 = np.float32
MLP_FORMAT = "mf-student-int8-mlp"
CNN_FORMAT = "mf-student-int8-cnn"
CNN_CH, SIDE, CONV, POOLED = 8, 28, 26, 13


# -- safetensors (the layout models/mnist/safetensors.c reads: no holes, strings only) ------
def st_write(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for name, arr in tensors:
        dt = {np.dtype(np.int8): "I8", np.dtype(np.float32): "F32"}[arr.dtype]
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(tmp, path)


def st_read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        s, e = t["data_offsets"]
        dt = {"I8": "<i1", "F32": "<f4"}[t["dtype"]]
        out[name] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(t["shape"]).copy()
    return out, meta


# -- the two int8 families: float modules, quantisation, and the int8 reference -------------
class Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, hidden), nn.Linear(hidden, 10)

    def forward(self, x):  # x: float pixels / 255
        return self.fc2(torch.relu(self.fc1(x)))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, CNN_CH, 3), nn.Linear(CNN_CH * POOLED * POOLED, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x.reshape(-1, 1, SIDE, SIDE)))
        return self.fc(nn.functional.max_pool2d(h, 2).flatten(1))


def layers(model):
    """(first, second) nn modules: conv or fc1, then the output layer."""
    return (model.fc1, model.fc2) if isinstance(model, Mlp) else (model.conv, model.fc)


def qtensor(w, scale=None):
    """Symmetric per-tensor int8 (round half away from zero, as C's roundf)."""
    w = w.astype(F32)
    if scale is None:
        mx = F32(np.abs(w).max())
        scale = F32(mx / F32(127)) if mx > 0 else F32(1)
    v = w / scale
    r = np.trunc(v)
    q = np.clip(r + np.sign(v) * (np.abs(v - r) >= F32(0.5)), -127, 127)
    return q.astype(np.int8), F32(scale)


def first_layer(family, q1, b1, s1, in_scale, x):
    """h = (float)acc * (in_scale * w_scale) + b, float32, shape (n, units) or (n, ch, 26, 26)."""
    m1 = F32(F32(in_scale) * F32(s1))
    if family == "mlp":
        acc = x.astype(np.int64) @ q1.astype(np.int64).T
        return acc.astype(np.int32).astype(F32) * m1 + b1
    img = x.reshape(-1, SIDE, SIDE).astype(np.int64)
    acc = np.zeros((len(x), CNN_CH, CONV, CONV), np.int64)
    for dy in range(3):
        for dx in range(3):
            patch = img[:, dy:dy + CONV, dx:dx + CONV]
            acc += patch[:, None] * q1[:, 0, dy, dx].astype(np.int64)[None, :, None, None]
    return acc.astype(np.int32).astype(F32) * m1 + b1[None, :, None, None]


def requant(h, hidden_scale):
    inv = F32(F32(1) / F32(hidden_scale))
    r = h * inv + F32(0.5)
    q = np.where(h > 0, np.where(r < F32(255), np.trunc(r), F32(255)), F32(0))
    return q.astype(np.int64)


def ref_logits(t, family, x):
    """The int8 reference of a decoded file `t` on uint8 inputs x (n, 784)."""
    sc = t["scales"].astype(F32)
    q1, b1, q2, b2 = (t["fc1.weight"], t["fc1.bias"], t["fc2.weight"], t["fc2.bias"]) \
        if family == "mlp" else (t["conv.weight"], t["conv.bias"], t["fc.weight"], t["fc.bias"])
    out = np.empty((len(x), len(b2)), F32)
    for i in range(0, len(x), 500):
        q = requant(first_layer(family, q1, b1, sc[1], sc[0], x[i:i + 500]), sc[2])
        if family == "cnn":
            n = len(q)
            q = q.reshape(n, CNN_CH, POOLED, 2, POOLED, 2).max(axis=(3, 5)).reshape(n, -1)
        acc = (q @ q2.astype(np.int64).T).astype(np.int32)
        out[i:i + 500] = acc.astype(F32) * F32(F32(sc[2]) * F32(sc[3])) + b2
    return out


def quantize(model, family, x_calib, parent=None):
    """The float model as int8 tensors; with `parent` (decoded file) its scales are kept."""
    l1, l2 = layers(model)
    w1, w2 = (l.weight.detach().numpy() for l in (l1, l2))
    b1, b2 = (l.bias.detach().numpy().astype(F32) for l in (l1, l2))
    names = ("fc1", "fc2") if family == "mlp" else ("conv", "fc")
    ps = parent["scales"] if parent is not None else None
    q1, s1 = qtensor(w1, ps[1] if ps is not None else None)
    q2, s2 = qtensor(w2, ps[3] if ps is not None else None)
    if ps is not None:
        hs = F32(ps[2])
    else:
        hmax = F32(0)
        for i in range(0, len(x_calib), 1000):
            hmax = max(hmax, F32(first_layer(family, q1, b1, s1, 1 / 255, x_calib[i:i + 1000]).max()))
        hs = F32(hmax / F32(255)) if hmax > 0 else F32(1)
    scales = np.array([F32(1) / F32(255), s1, hs, s2, F32(1)], F32)
    return {names[0] + ".weight": q1, names[0] + ".bias": b1,
            names[1] + ".weight": q2, names[1] + ".bias": b2, "scales": scales}


def limit_changes(t, parent, share):
    """Keeps the `share` of int8 weights that moved most; the rest stay the parent's bytes."""
    keys = [k for k in t if k.endswith(".weight")]
    moved = np.concatenate([np.abs(t[k].astype(np.int16) - parent[k]).ravel() for k in keys])
    total = len(moved)
    keep = int(share * total)
    if keep < np.count_nonzero(moved):
        cut = np.sort(moved)[::-1][keep]  # weights moving by more than `cut` keep their value
        for k in keys:
            d = np.abs(t[k].astype(np.int16) - parent[k])
            t[k] = np.where(d > cut, t[k], parent[k]).astype(np.int8)
    changed = sum(int(np.count_nonzero(t[k] != parent[k])) for k in keys)
    return changed, total


def save_student(path, t, family, notes):
    order = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "scales"] if family == "mlp" \
        else ["conv.weight", "conv.bias", "fc.weight", "fc.bias", "scales"]
    fmt = MLP_FORMAT if family == "mlp" else CNN_FORMAT
    st_write(path, [(k, t[k]) for k in order],
             {"format": fmt, "format_version": "1", "notes": notes})


def family_of(meta):
    return {MLP_FORMAT: "mlp", CNN_FORMAT: "cnn"}.get(meta.get("format"))


def warm_load(model, family, parent):
    l1, l2 = layers(model)
    names = ("fc1", "fc2") if family == "mlp" else ("conv", "fc")
    sc = parent["scales"]
    with torch.no_grad():
        l1.weight.copy_(torch.from_numpy(parent[names[0] + ".weight"].astype(F32) * sc[1]))
        l1.bias.copy_(torch.from_numpy(parent[names[0] + ".bias"]))
        l2.weight.copy_(torch.from_numpy(parent[names[1] + ".weight"].astype(F32) * sc[3]))
        l2.bias.copy_(torch.from_numpy(parent[names[1] + ".bias"]))


def train(args):
    d = args.dir
    job = json.load(open(d + "/job.json"))
    n, dim, k, temp = job["n"], job["dim"], job["classes"], float(job["temperature"])
    if dim != SIDE * SIDE or k != 10:
        sys.exit("student_trainer: job has dim %d, classes %d; the families take 784 and 10" % (dim, k))
    x = np.fromfile(d + "/train_x.u8", np.uint8).reshape(n, dim)
    y = np.fromfile(d + "/train_y.u8", np.uint8)
    soft = np.fromfile(d + "/train_soft.f32", "<f4").reshape(n, k)
    has_soft = np.fromfile(d + "/train_has_soft.u8", np.uint8) != 0
    torch.manual_seed(job["seed"])
    torch.set_num_threads(args.threads)
    model = Mlp(int(job["hidden"])) if args.family == "mlp" else Cnn()
    parent = None
    if job["warm_start"] and job["parent"]:
        parent, meta = st_read(d + "/" + job["parent"])
        if family_of(meta) != args.family:
            sys.exit("student_trainer: the parent is %s, not a %s student" %
                     (meta.get("format"), args.family))
        warm_load(model, args.family, parent)
    epochs = args.epochs or int(job["epochs"])
    lr = args.lr or (1e-3 if parent is not None else 3e-3)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps = max(epochs * ((n + args.batch - 1) // args.batch), 1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    xt = torch.from_numpy(x.astype(F32) / F32(255))
    yt = torch.from_numpy(y.astype(np.int64))
    st = torch.from_numpy(soft)
    hs = torch.from_numpy(has_soft)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(n).split(args.batch):
            z = model(xt[idx])
            loss = torch.zeros(())
            s, lab = hs[idx], yt[idx] != 255
            if s.any():  # T^2 * KL(q || p_T)
                logp = torch.log_softmax(z[s] / temp, 1)
                q = st[idx][s]
                kl = (q * (torch.log(q.clamp_min(1e-12)) - logp)).sum(1)
                loss = loss + temp * temp * kl.sum()
            if lab.any():
                loss = loss + nn.functional.cross_entropy(z[lab], yt[idx][lab], reduction="sum")
            opt.zero_grad()
            (loss / len(idx)).backward()
            opt.step()
            sched.step()
    model.eval()
    keep_scales = parent if (parent is not None and args.max_changed is not None) else None
    t = quantize(model, args.family, x, keep_scales)
    notes = "student_trainer.py %s, %d rows, %d epochs" % (args.family, n, epochs)
    if keep_scales is not None:
        changed, total = limit_changes(t, parent, args.max_changed)
        notes += ", %d of %d int8 weights changed" % (changed, total)
        print("student_trainer: %d of %d int8 weights changed (%.1f %%)" %
              (changed, total, 100.0 * changed / total), file=sys.stderr)
    acc = float((ref_logits(t, args.family, x).argmax(1) == y)[y != 255].mean()) if (y != 255).any() else 0
    print("student_trainer: %s, %d rows, int8 accuracy on the labelled rows %.2f %%" %
          (args.family, n, 100 * acc), file=sys.stderr)
    save_student(d + "/out/model.safetensors", t, args.family, notes)


def load_idx_images(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        _, n, rows, cols = struct.unpack(">IIII", f.read(16))
        return np.frombuffer(f.read(), np.uint8).reshape(n, rows * cols)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--family", choices=("mlp", "cnn"), default="mlp")
    t.add_argument("--max-changed", type=float, default=None,
                   help="share of int8 weights that may change from the parent (warm start)")
    t.add_argument("--lr", type=float, default=None)
    t.add_argument("--epochs", type=int, default=None, help="overrides job.json epochs")
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("dir")
    lg = sub.add_parser("logits")
    lg.add_argument("model")
    lg.add_argument("images")
    lg.add_argument("out")
    info = sub.add_parser("info")
    info.add_argument("model")
    args = p.parse_args()
    if args.cmd == "train":
        if args.max_changed is not None and not 0 <= args.max_changed <= 1:
            p.error("--max-changed takes a share in [0, 1]")
        train(args)
        return
    tensors, meta = st_read(args.model)
    family = family_of(meta)
    if family is None:
        sys.exit("student_trainer: %s is not an int8 student (format %s)" % (args.model, meta.get("format")))
    if args.cmd == "info":
        print(json.dumps({"family": family, "meta": meta,
                          "tensors": {k: list(v.shape) for k, v in tensors.items()}}))
        return
    ref_logits(tensors, family, load_idx_images(args.images)).astype("<f4").tofile(args.out)


if __name__ == "__main__":
    main()
