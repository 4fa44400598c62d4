# SPDX-License-Identifier: Apache-2.0
"""Uplinks Fashion-MNIST train images as a device would (sync offload asks), for
distill_loop.sh: enrolls DEVICE, then asks the teacher about COUNT images starting at
FIRST (FIRST = @FILE: the indices listed in FILE, one a line; COUNT is then ignored). The
model is "fashion": callers for another model rewrite that literal (sed). Standard library
only. Usage: distill_uplink.py URL ENROLL_TOKEN_FILE IMAGES.gz DEVICE FIRST COUNT VERSION"""
import base64, gzip, json, os, struct, sys, urllib.request

url, token_file, images, device, first, count, version = sys.argv[1:8]
if first.startswith("@"):
    indices = [int(l) for l in open(first[1:]) if l.strip()]
else:
    indices = range(int(first), int(first) + int(count))


def post(path, body, cred=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if cred:
        req.add_header("Authorization", "Bearer " + cred)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


with gzip.open(images) as f:
    magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
    data = f.read()
dim = rows * cols
cred = post("/v1/enroll", {"enrollment_token": open(token_file).read().strip(),
                           "device_id": device})["credential"]
stored = 0
for i in indices:
    sid = os.urandom(16).hex()
    sample = {"id": sid, "kind": "hard", "model": "fashion", "model_version": version,
              "method": "max_softmax", "score": 0.3, "output_kind": "logits",
              "output": [0.0] * 10,
              "input": base64.b64encode(data[i * dim:(i + 1) * dim]).decode()}
    ans = post("/v1/offload/ask", {"request_id": sid, "deadline_ms": 5000, "sample": sample}, cred)
    stored += 1 if ans.get("stored") else 0
print(stored)
