# SPDX-License-Identifier: Apache-2.0
"""The per-round table of scripts/demo (the distillation loop). Reads, from WORK: rounds.jsonl
(round, run id, outcome), run<ID>.json (the run with its provenance record), stats-<r>.json
snapshots of mf-example-fleet's counters, check-<r>.json (mf-example-sample-check on the
sample export). Usage: loop_table.py WORK ROUNDS"""
import json
import os
import sys

work, rounds = sys.argv[1], int(sys.argv[2])


def load(name, default):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def totals(stats):
    t = {"images": 0, "cascade_correct": 0, "student_correct": 0, "by_teacher": 0,
         "hard": 0, "audit": 0}
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
    return "   -  " if x is None else "%6.2f" % (100 * x)


runs = [json.loads(l) for l in open(os.path.join(work, "rounds.jsonl")) if l.strip()]
print("round  version  student  cascade | fleet: cascade offload(target 10%)  hard audit"
      "  teacher@audit | delivered delta/full KiB | outcome")
first = load("run1.json", {}).get("record", {}).get("metrics", {}).get("candidate", {})
print("%5s  %-7s  %s   %s  | %s" % (0, "d1", pct(first.get("student_accuracy")),
                                     pct(first.get("cascade_accuracy")), "seed student"))
prev = totals(load("stats-0.json", {}))
deployed = first
for r in runs:
    run = load("run%d.json" % r["run"], {})
    m = run.get("record", {}).get("metrics", {})
    cand = m.get("candidate", {})
    if r["outcome"] == "done":
        deployed = cand
    cur = totals(load("stats-%d.json" % r["round"], {}))
    d = {k: cur[k] - prev[k] for k in cur}
    prev = cur
    img = d["images"] or 1
    print("%5d  %-7s  %s   %s  |        %s   %s        %5d %5d       %s   | %8.1f / %-8.1f     | %s %s" % (
        r["round"], run.get("version") or run.get("parent", "?"),
        pct(deployed.get("student_accuracy")), pct(deployed.get("cascade_accuracy")),
        pct(d["cascade_correct"] / img), pct(d["by_teacher"] / img), d["hard"], d["audit"],
        pct(teacher_audit(load("check-%d.json" % r["round"], {}))),
        d["bytes_delta"] / 1024.0, d["bytes_full"] / 1024.0, run.get("state", "?"),
        "" if r["outcome"] == run.get("state") else "-> rollout " + r["outcome"]))
print("\nstudent/cascade: the deployed version on the 5,000 held-out items (gate figures);"
      " fleet: what the devices measured this round;\nteacher@audit: the teacher's accuracy on"
      " the audit slice (ground truth from the dataset); delivered: model bytes devices"
      " downloaded this round.")
