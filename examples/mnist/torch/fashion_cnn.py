#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch teacher of the example (docs/offload.md, "A PyTorch teacher over KServe v2"):
a small CNN for Fashion-MNIST, trained on CPU with Debian's python3-torch and cached, so a
second run loads the weights instead of training again. kserve_server.py serves it.

  /usr/bin/python3 examples/mnist/torch/fashion_cnn.py --out fashion_cnn.pt [--epochs 6]

prints the test accuracy (the official 10k test set) on its last line. Inputs are the raw
28x28 uint8 images, scaled by 1/255 inside the model, so a client sends the bytes a device
uplinks. Reads the IDX files Debian's dataset-fashion-mnist installs; downloads nothing.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import torch
from torch import nn

FASHION = "/usr/share/datasets/fashion-mnist"


class FashionCNN(nn.Module):
    """conv 32 - pool - conv 64 - pool - fc 128 - fc 10 on 28x28 bytes; `width` scales it."""

    def __init__(self, width=1.0):
        super().__init__()
        c1, c2, h = max(int(32 * width), 2), max(int(64 * width), 2), max(int(128 * width), 4)
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(c2 * 49, h),
                                  nn.ReLU(), nn.Dropout(0.25), nn.Linear(h, 10))
        self.width = width

    def forward(self, x):  # x: (n, 784) or (n, 1, 28, 28) uint8 or float byte values
        x = x.float().reshape(-1, 1, 28, 28) / 255.0
        return self.head(self.features(x))


def load_idx(images, labels):
    with gzip.open(images) as f:
        _, n, rows, cols = struct.unpack(">IIII", f.read(16))
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).reshape(n, rows * cols)
    with gzip.open(labels) as f:
        _, m = struct.unpack(">II", f.read(8))
        y = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    assert n == m
    return x, y


def accuracy(model, x, y, batch=1000):
    model.eval()
    ok = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            ok += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    return ok / len(x)


def save(model, path, meta):
    tmp = path + ".tmp"
    torch.save({"state": model.state_dict(), "width": model.width, "meta": meta}, tmp)
    os.replace(tmp, path)  # a killed run never leaves half a cache


def load(path):
    blob = torch.load(path, map_location="cpu")
    model = FashionCNN(blob["width"])
    model.load_state_dict(blob["state"])
    model.eval()
    return model, blob["meta"]


def train(args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    x, y = load_idx(args.data + "/train-images-idx3-ubyte.gz",
                    args.data + "/train-labels-idx1-ubyte.gz")
    tx, ty = load_idx(args.data + "/t10k-images-idx3-ubyte.gz",
                      args.data + "/t10k-labels-idx1-ubyte.gz")
    model = FashionCNN(args.width)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    steps = args.epochs * ((len(x) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), args.batch):
            idx = perm[i:i + args.batch]
            xb = x[idx].reshape(-1, 28, 28)
            flip = torch.rand(len(idx)) < 0.5  # horizontal flips: clothes are symmetric
            xb[flip] = xb[flip].flip(2)
            opt.zero_grad()
            loss = loss_fn(model(xb), y[idx])
            loss.backward()
            opt.step()
            sched.step()
        print("epoch %d: loss %.4f, test %.2f %%, %.0f s" %
              (epoch + 1, loss.item(), 100 * accuracy(model, tx, ty), time.time() - t0),
              file=sys.stderr)
    acc = accuracy(model, tx, ty)
    save(model, args.out, {"epochs": args.epochs, "seed": args.seed, "test_accuracy": acc,
                           "seconds": round(time.time() - t0)})
    return acc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="weights cache (.pt)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--width", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default=FASHION)
    args = p.parse_args()
    if os.path.exists(args.out):
        model, meta = load(args.out)
        print("fashion_cnn: cached %s (%s)" % (args.out, meta), file=sys.stderr)
        acc = meta["test_accuracy"]
    else:
        acc = train(args)
    print("test accuracy %.2f %%" % (100 * acc))


if __name__ == "__main__":
    main()
