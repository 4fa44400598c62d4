#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes golden batch-signed assignments (docs/formats/manifest.md §2.1) with hashlib and the
# openssl command line only: an implementation of the Merkle tree (RFC 9162 §2.1.1/§2.1.3),
# PAE and the batch body that shares no code with manifests/, checked by
# tests/unit/test_manifest_batch.c and used by the manifest_verify fuzz corpus.
# Usage: tests/data/manifest/make_batch.py   (uses director.key.pem and release.json here)
import base64
import hashlib
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ATYPE = "application/vnd.modelferry.assignment+json"
BTYPE = "application/vnd.modelferry.assignment-batch"
NONCE = "00112233445566778899aabbccddeeff"


def pae(t, body):
    return b"DSSEv1 %d %s %d " % (len(t), t.encode(), len(body)) + body


def h(b):
    return hashlib.sha256(b).digest()


def mth(leaves):
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return h(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def path(m, leaves):
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


def ecdsa(key, data):
    return subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=data,
                          capture_output=True, check=True).stdout


def keyid(key):
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"],
                         capture_output=True, check=True).stdout
    return h(der).hex()


def main():
    with open(os.path.join(HERE, "release.json"), "rb") as f:
        rel = json.loads(f.read())
    release_digest = h(base64.b64decode(rel["payload"])).hex()
    key = os.path.join(HERE, "director.key.pem")
    payloads = []
    for i in range(5):
        device = "cam-0001" if i == 2 else "cam-%04d" % (100 + i)
        payloads.append(json.dumps({
            "_type": "assignment", "spec_version": 1, "device_id": device,
            "model": "detector", "release_sha256": release_digest, "nonce": NONCE,
            "sequence": 1, "pin": False}, separators=(",", ":")).encode())
    leaves = [h(b"\x00" + pae(ATYPE, p)) for p in payloads]
    root = mth(leaves)
    sig = ecdsa(key, pae(BTYPE, root + len(leaves).to_bytes(8, "big")))
    i = 2
    env = {"payloadType": ATYPE, "payload": base64.b64encode(payloads[i]).decode(),
           "signatures": [{"keyid": keyid(key), "sig": base64.b64encode(sig).decode(),
                           "batch": {"index": i, "size": len(leaves),
                                     "path": [base64.b64encode(x).decode()
                                              for x in path(i, leaves)]}}]}
    with open(os.path.join(HERE, "assignment_batch.json"), "w") as f:
        f.write(json.dumps(env, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
