#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates tests/fuzz/corpus/diff_apply from small old/new pairs with mf-delta.

Usage: tests/data/diff/make_fuzz_corpus.py BUILD_DIR
Each corpus file is [in-window selector][out-window selector][old length u16][old][patch]
(see tests/fuzz/diff_apply_fuzzer.c). Patches use an 8 KiB window so several blocks and
every block kind show up in a few kilobytes.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

def weights(rng, n):
    return [rng.gauss(0, 0.05) for _ in range(n)]

def pairs(rng):
    w = weights(rng, 4000)
    f32 = struct.pack("<%df" % len(w), *w)
    tuned = struct.pack("<%df" % len(w), *[x * (1 + rng.gauss(0, 1e-3)) for x in w])
    rnd = bytes(rng.getrandbits(8) for _ in range(9000))
    sparse = bytearray(rnd)
    for _ in range(60):
        sparse[rng.randrange(len(sparse))] ^= 1
    yield "finetune", f32, tuned
    yield "sparse", rnd, bytes(sparse)
    yield "shifted", rnd, bytes(rng.getrandbits(8) for _ in range(333)) + rnd[:7000]
    yield "identical", rnd[:5000], rnd[:5000]
    yield "random", rnd[:3000], bytes(rng.getrandbits(8) for _ in range(2500))
    yield "empty-old", b"", rnd[:700]
    yield "empty-new", rnd[:700], b""
    yield "one-byte", b"a", b"b"

def main():
    build = sys.argv[1]
    tool = os.path.join(build, "bin", "mf-delta")
    out = os.path.join(os.path.dirname(__file__), "..", "..", "fuzz", "corpus", "diff_apply")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1234)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, old, new) in enumerate(pairs(rng)):
            paths = [os.path.join(tmp, x) for x in ("old", "new", "patch")]
            for path, data in zip(paths, (old, new)):
                with open(path, "wb") as f:
                    f.write(data)
            subprocess.run([tool, "diff", "--window", "8192", "--level", "19", *paths], check=True)
            with open(paths[2], "rb") as f:
                patch = f.read()
            head = bytes([i % 8, (i * 3 + 1) % 8]) + struct.pack("<H", len(old))
            with open(os.path.join(out, name), "wb") as f:
                f.write(head + old + patch)

if __name__ == "__main__":
    main()
