# SPDX-License-Identifier: Apache-2.0
"""The per-round table of scripts/demo (the distillation loop). Reads, from WORK: rounds.jsonl
(round, run id, outcome), run<ID>.json (the run with its provenance record), stats-<r>.json
snapshots of mf-example-fleet's counters, check-<r>.json (mf-example-sample-check on the
sample export). Usage: loop_table.py WORK"""
import json
import os
import sys

work = sys.argv[1]


def load(name, default):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def totals(stats):
    t = {"images": 0, "cascade_correct": 0, "by_teacher": 0, "hard": 0, "audit": 0}
    for v in stats.get("versions", []):
        for k in t:
            t[k] += v.get(k, 0)
    t["bytes_delta"] = stats.get("bytes_delta", 0)
    t["bytes_full"] = stats.get("bytes_full", 0)
    return t


def teacher_audit(check):
    labelled = correct = 0
    for g in check.get("groups", []):
        if g.get("kind") == "audit":
            labelled += g.get("labelled", 0)
            correct += g.get("teacher_correct", 0)
    return correct / labelled if labelled else None


def pct(x):
    return "  -   " if x is None else "%6.2f" % (100 * x)


runs = [json.loads(l) for l in open(os.path.join(work, "rounds.jsonl")) if l.strip()]
seed = load("run1.json", {})
first = seed.get("record", {}).get("metrics", {}).get("candidate", {})
deployed, deployed_v = first, seed.get("version", "d1")
print("      candidate (held-out)                                    | deployed (held-out) |"
      " fleet this round                                 | delivered KiB")
print("round version student cascade  outcome  patch   gain   B/pt | version     cascade |"
      " cascade offload  hard audit teacher@audit | delta    full")
print("%5d %-7s  %s  %s  seed         -      -      - | %-7s      %s |" % (0, deployed_v, pct(
    first.get("student_accuracy")), pct(first.get("cascade_accuracy")), deployed_v,
    pct(first.get("cascade_accuracy"))))
promoted_bytes = promoted_gain = promoted_n = 0
prev = totals(load("stats-0.json", {}))
for r in runs:
    run = load("run%d.json" % r["run"], {})
    cand = run.get("record", {}).get("metrics", {}).get("candidate", {})
    outcome = r["outcome"]
    if outcome == "done":
        deployed, deployed_v = cand, run.get("version")
    cur = totals(load("stats-%d.json" % r["round"], {}))
    d = {k: cur[k] - prev[k] for k in cur}
    prev = cur
    img = d["images"] or 1
    patch = run.get("record", {}).get("delta_bytes")
    parent = run.get("record", {}).get("metrics", {}).get("parent", {})
    # gain: the candidate's held-out cascade over its parent's, in points, measured in the
    # same run; B/pt: the promoted patch's bytes per point gained (devices download these).
    gain = None
    if cand.get("cascade_accuracy") is not None and parent.get("cascade_accuracy") is not None:
        gain = 100 * (cand["cascade_accuracy"] - parent["cascade_accuracy"])
    per_pt = "-"
    if outcome == "done" and patch:
        promoted_n += 1
        promoted_bytes += patch
        promoted_gain += gain or 0
        if gain and gain > 0:
            per_pt = "%.0f" % (patch / gain)
    print("%5d %-7s  %s  %s  %-8s %5s %6s %6s | %-7s      %s |  %s  %s %5d %5d        %s |"
          " %7.1f %7.1f" % (
        r["round"], run.get("version") or "-", pct(cand.get("student_accuracy")),
        pct(cand.get("cascade_accuracy")), {"done": "promoted"}.get(outcome, outcome),
        "%.1fK" % (patch / 1024.0) if patch else "-",
        "-" if gain is None else "%+.2f" % gain, per_pt,
        deployed_v, pct(deployed.get("cascade_accuracy")), pct(d["cascade_correct"] / img),
        pct(d["by_teacher"] / img), d["hard"], d["audit"],
        pct(teacher_audit(load("check-%d.json" % r["round"], {}))), d["bytes_delta"] / 1024.0,
        d["bytes_full"] / 1024.0))
if promoted_n:
    print("promoted patches: %d round(s), %d bytes in all, %+.2f pt held-out cascade gained over"
          " their parents, %s bytes per point" % (promoted_n, promoted_bytes, promoted_gain,
                                                  "%.0f" % (promoted_bytes / promoted_gain)
                                                  if promoted_gain > 0 else "-"))
print("""
candidate: the run's new student on the 5,000 held-out test items (never trained on), its
  cascade with the threshold fitted for a 10 % offload; outcome: rejected by the gate,
  promoted or halted by its canary's red lines; patch: the delta from the parent (warm start
  keeps it small; the full file is 25.4 KiB); gain: candidate minus parent held-out cascade
  (points, same run); B/pt: a promoted patch's bytes per point gained. deployed: what the fleet runs after the round.
fleet: measured by the devices on test items 0-4999: cascade accuracy, realised offload rate,
  hard (uncertain) and audit samples uplinked, the teacher's accuracy on the audit slice
  (ground truth from the dataset); delivered: model bytes downloaded as deltas / full files.""")
