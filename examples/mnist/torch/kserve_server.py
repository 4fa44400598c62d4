#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small model server for the PyTorch teacher (fashion_cnn.py) over the KServe v2 / Open
Inference Protocol (REST), so mf-server's kserve connector talks to a real framework over
HTTP. Standard library http.server plus Debian's python3-torch, CPU, loopback by default.

  /usr/bin/python3 examples/mnist/torch/kserve_server.py --weights fashion_cnn.pt \
      [--name fashion-cnn] [--host 127.0.0.1] [--port 8000] [--port-file F]
  ... --untrained [--width 0.25] [--seed 1]   a random CNN (tests: the protocol, not accuracy)

Routes (https://kserve.github.io/website/latest/modelserving/data_plane/v2_protocol/):
  GET  /v2/health/live, /v2/health/ready          200
  GET  /v2/models/{name}, /v2/models/{name}/ready  metadata / 200
  POST /v2/models/{name}/infer   {"inputs": [{"name", "shape": [n, 784] or [784],
        "datatype": "UINT8"|"FP32"|..., "data": [...] (flat or nested)}]}
        -> {"model_name", "model_version", "id"?, "outputs": [{"name": "probabilities",
           "shape": [n, 10], "datatype": "FP32", "data": [...]}]}
Bad requests are 400 with {"error": "..."} (unknown keys included), unknown models 404.
With --port 0 the kernel picks the port; --port-file receives it once the server listens.
"""
import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_cnn import FashionCNN, load  # noqa: E402

DIM, CLASSES, MAX_BODY, MAX_BATCH = 784, 10, 16 << 20, 1024
REQUEST_KEYS = {"id", "parameters", "inputs", "outputs"}
INPUT_KEYS = {"name", "shape", "datatype", "data", "parameters"}
DATATYPES = {"UINT8", "INT8", "INT16", "INT32", "INT64", "UINT16", "UINT32", "FP16", "FP32",
             "FP64"}


class BadRequest(Exception):
    pass


def flatten(data):
    out = []
    stack = [data]
    while stack:  # iterative: a deeply nested body cannot exhaust the stack
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(v)
        else:
            raise BadRequest("input data must be numbers")
    return out


def parse_request(body):
    try:
        req = json.loads(body)
    except ValueError as e:
        raise BadRequest("not JSON: %s" % e)
    if not isinstance(req, dict) or set(req) - REQUEST_KEYS:
        raise BadRequest("unknown keys %s" % sorted(set(req) - REQUEST_KEYS)
                         if isinstance(req, dict) else "expected an object")
    inputs = req.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 1 or not isinstance(inputs[0], dict):
        raise BadRequest("expected exactly one input tensor")
    t = inputs[0]
    if set(t) - INPUT_KEYS:
        raise BadRequest("unknown input keys %s" % sorted(set(t) - INPUT_KEYS))
    shape, dtype = t.get("shape"), t.get("datatype")
    if dtype not in DATATYPES:
        raise BadRequest("datatype %r is not a numeric v2 datatype" % (dtype,))
    if (not isinstance(shape, list) or not shape or
            not all(isinstance(d, int) and d > 0 for d in shape)):
        raise BadRequest("shape must be a list of positive integers")
    n = 1
    for d in shape:
        n *= d
    if n % DIM or n // DIM > MAX_BATCH or shape[-1] not in (DIM, 28):
        raise BadRequest("shape %s is not [n, 784] (n <= %d) or [n, 28, 28]" % (shape, MAX_BATCH))
    values = flatten(t.get("data"))
    if len(values) != n:
        raise BadRequest("%d values for shape %s" % (len(values), shape))
    x = torch.tensor(values, dtype=torch.float32).reshape(n // DIM, DIM)
    if not torch.isfinite(x).all() or x.min() < 0 or x.max() > 255:
        raise BadRequest("pixel values must be in [0, 255]")
    return req.get("id"), x


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the test reads stderr for errors only
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def model_path(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) >= 3 and parts[:2] == ["v2", "models"]:
            return parts[2], parts[3:]
        return None, parts

    def do_GET(self):
        srv = self.server
        if self.path in ("/v2/health/live", "/v2/health/ready"):
            return self.reply(200, {"live": True} if "live" in self.path else {"ready": True})
        name, rest = self.model_path()
        if name != srv.model_name:
            return self.reply(404, {"error": "unknown model %r" % name})
        if rest == ["ready"]:
            return self.reply(200, {"name": name, "ready": True})
        if rest == []:
            return self.reply(200, {
                "name": name, "versions": [srv.version], "platform": "pytorch_torchscript",
                "inputs": [{"name": "input", "datatype": "UINT8", "shape": [-1, DIM]}],
                "outputs": [{"name": "probabilities", "datatype": "FP32",
                             "shape": [-1, CLASSES]}]})
        return self.reply(404, {"error": "no route %s" % self.path})

    def do_POST(self):
        srv = self.server
        name, rest = self.model_path()
        if rest != ["infer"]:
            return self.reply(404, {"error": "no route %s" % self.path})
        if name != srv.model_name:
            return self.reply(404, {"error": "unknown model %r" % name})
        try:
            n = int(self.headers.get("Content-Length", "-1"))
        except ValueError:
            n = -1
        if n < 0 or n > MAX_BODY:
            return self.reply(400, {"error": "a Content-Length up to %d is required" % MAX_BODY})
        try:
            rid, x = parse_request(self.rfile.read(n))
        except BadRequest as e:
            return self.reply(400, {"error": str(e)})
        with srv.lock, torch.no_grad():
            p = torch.softmax(srv.model(x).double(), dim=1)
        out = {"model_name": name, "model_version": srv.version,
               "outputs": [{"name": "probabilities", "shape": [len(x), CLASSES],
                            "datatype": "FP32", "data": p.flatten().tolist()}]}
        if rid is not None:
            out["id"] = rid
        return self.reply(200, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--weights", help="cache written by fashion_cnn.py")
    p.add_argument("--untrained", action="store_true", help="a random CNN (tests)")
    p.add_argument("--width", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--name", default="fashion-cnn")
    p.add_argument("--version", help="model_version in answers (default: from the weights)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--port-file")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    if bool(args.weights) == args.untrained:
        p.error("give --weights or --untrained")
    torch.set_num_threads(args.threads)
    if args.untrained:
        torch.manual_seed(args.seed)
        model, version = FashionCNN(args.width).eval(), "cnn-untrained-%d" % args.seed
    else:
        model, meta = load(args.weights)
        version = "cnn-%.2f" % (100 * meta["test_accuracy"])
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    srv.model, srv.model_name, srv.version = model, args.name, args.version or version
    srv.lock = threading.Lock()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(tmp, args.port_file)
    print("kserve_server: %s %s on http://%s:%d" % (args.name, srv.version, args.host,
                                                     srv.server_address[1]), file=sys.stderr)
    srv.serve_forever()


if __name__ == "__main__":
    main()
