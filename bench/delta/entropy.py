#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Entropy bounds for the delta and full-blob tables of bench/delta/README.md (not a test).
#
# usage: python3 bench/delta/entropy.py CORPUS_DIR [PAIR...]     (needs numpy)
#
# Per pair, in bytes (and % of `zstd -19 --long=31` of the new file when CORPUS_DIR/.bench-cache
# or a zstd on PATH gives it):
#   res0   order-0 entropy of the residual new - old, words of the pair's element size at the
#          same offset, zigzagged, each byte plane coded on its own: what the NUMERIC transform
#          with per-plane coding can reach at best when every byte is aligned by position
#          (pairs whose layout moved, or changed dtype, are not bounded by this);
#   res1   the same with each plane conditioned on the plane above it (order-1 across planes);
#   full0  order-0 of the new file's float planes (sign rotated, exponent plane, mantissa
#          bytes), the bound of a full-blob coder with per-plane tables;
#   full1  exponent given the previous exponent plus mantissa given exponent (the contexts the
#          float planes and zstd's matches can exploit).
# With MF_DELTA=path/to/mf-delta, also (from the mf patch of the pair, made with default options):
#   mf     the mf patch's size;
#   mfres0 the same patch with every dense or sparse (non-raw) NUMERIC block replaced by the
#          order-0 entropy of its own residual planes (per block, per plane: the tables zstd
#          gets), all other blocks and headers as they are: how close mf's residual coding is
#          to the bound of any order-0 coder given mf's own alignment.
import os
import subprocess
import sys

import numpy as np

WORD = {'silero-vad-v4-to-v5': 4, 'facemesh-f32-to-f16': 2, 'pose-lite-retrain': 2,
        'pose-heavy-retrain': 2, 'human-models-bundle': 4, 'synthetic-finetune': 4,
        'synthetic-partial': 4, 'synthetic-finetune-int8': 1}


def h(a):
    """Order-0 entropy of a sequence of small integers, in bits per element."""
    if a.size == 0:
        return 0.0
    _, c = np.unique(a, return_counts=True)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def hc(a, ctx):
    """H(a | ctx) in bits per element."""
    return h(ctx.astype(np.int64) * 65536 + a.astype(np.int64)) - h(ctx)


def words(buf, w):
    n = len(buf) // w * w
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[w]
    return np.frombuffer(buf[:n], dtype=dt).astype(np.uint64), n


def planes(v, w):
    return [((v >> np.uint64(8 * k)) & np.uint64(255)).astype(np.int64) for k in range(w)]


def residual_bounds(old, new, w):
    n = min(len(old), len(new)) // w * w
    o, _ = words(old[:n], w)
    nw, _ = words(new[:n], w)
    bits = 8 * w
    mask = np.uint64((1 << bits) - 1)
    r = (nw - o) & mask
    sign = (r >> np.uint64(bits - 1)) & np.uint64(1)
    z = ((r << np.uint64(1)) & mask) ^ (np.uint64(0) - sign) & mask
    p = planes(z, w)
    tail = len(new) - n  # bytes beyond the common length: counted at 8 bits
    b0 = sum(h(x) for x in p) * (n // w) / 8 + tail
    b1 = (h(p[-1]) + sum(hc(p[k], p[k + 1]) for k in range(w - 1))) * (n // w) / 8 + tail
    return b0, b1


def full_bounds(new, w):
    if w == 1:
        b = h(np.frombuffer(new, dtype=np.uint8)) * len(new) / 8
        return b, b
    v, n = words(new, w)
    bits = 8 * w
    mask = np.uint64((1 << bits) - 1)
    u = ((v << np.uint64(1)) | (v >> np.uint64(bits - 1))) & mask
    p = planes(u, w)
    e = p[-1]
    ep = np.concatenate([[0], e[:-1]])
    b0 = (h(e) + sum(h(x) for x in p[:-1])) * (n // w) / 8 + (len(new) - n)
    b1 = (hc(e, ep) + hc(p[-2], e) + sum(h(x) for x in p[:-2])) * (n // w) / 8 + (len(new) - n)
    return b0, b1


def mf_bounds(mf, old_path, new_path, ob, nb):
    """(patch size, patch size with NUMERIC residual payloads replaced by their entropy)."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        patch = os.path.join(t, 'p')
        subprocess.run([mf, 'diff', '--threads', '2', old_path, new_path, patch], check=True,
                       stdout=subprocess.DEVNULL)
        info = subprocess.run([mf, 'info', patch], stdout=subprocess.PIPE, check=True,
                              text=True).stdout
        size = os.path.getsize(patch)
    bound = 104.0
    for line in info.splitlines():
        f = line.split()
        if not f or f[0] != 'block':
            continue
        kind, w = f[2], int(f[3][1:])
        off, ln = int(f[5]), int(f[6][1:])
        payload, old_off = int(f[8]), int(f[10])
        bound += 32
        if not kind.startswith('numeric') or kind in ('numeric/raw', 'numeric/float'):
            bound += payload
            continue
        o, _ = words(ob[old_off:old_off + ln], w)
        n, _ = words(nb[off:off + ln], w)
        bits = 8 * w
        mask = np.uint64((1 << bits) - 1)
        r = (n - o) & mask
        sign = (r >> np.uint64(bits - 1)) & np.uint64(1)
        z = ((r << np.uint64(1)) & mask) ^ ((np.uint64(0) - sign) & mask)
        bound += sum(h(x) for x in planes(z, w)) * (ln // w) / 8
    return size, bound


def zstd_size(path):
    out = subprocess.run(['zstd', '-q', '-c', '-19', '--long=31', '-T1', path],
                         stdout=subprocess.PIPE, check=True).stdout
    return len(out)


def main():
    corpus = sys.argv[1]
    pairs = sys.argv[2:] or sorted(d for d in os.listdir(corpus) if d in WORD)
    mf = os.environ.get('MF_DELTA')
    print('%-24s %2s %11s %11s %6s %11s %6s %11s %6s %11s %6s%s' %
          ('pair', 'w', 'zstd', 'res0', '%zstd', 'res1', '%zstd', 'full0', '%zstd', 'full1',
           '%zstd', '          mf  %zstd      mfres0  %zstd mf/mfres0' if mf else ''))
    for pair in pairs:
        d = os.path.join(corpus, pair)
        old = [f for f in os.listdir(d) if f.startswith('old.')][0]
        new = [f for f in os.listdir(d) if f.startswith('new.')][0]
        ob = open(os.path.join(d, old), 'rb').read()
        nb = open(os.path.join(d, new), 'rb').read()
        w = WORD[pair]
        z = zstd_size(os.path.join(d, new))
        r0, r1 = residual_bounds(ob, nb, w)
        f0, f1 = full_bounds(nb, w)
        tail = ''
        if mf:
            ms, mb = mf_bounds(mf, os.path.join(d, old), os.path.join(d, new), ob, nb)
            tail = ' %11d %6.1f %11d %6.1f %9.3f' % (ms, 100 * ms / z, mb, 100 * mb / z, ms / mb)
        print('%-24s %2d %11d %11d %6.1f %11d %6.1f %11d %6.1f %11d %6.1f%s' %
              (pair, w, z, r0, 100 * r0 / z, r1, 100 * r1 / z, f0, 100 * f0 / z, f1,
               100 * f1 / z, tail))


if __name__ == '__main__':
    main()
