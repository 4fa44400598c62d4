# SPDX-License-Identifier: Apache-2.0
"""The targets of issue 21 from the rows bench/loop/targets.sh prints (TSV: rep round loop
state parent_student parent_cascade cand_student cand_cascade cand_offload deployed_student
deployed_cascade, percents; round 0 is the seed). Usage: targets_summary.py ROWS TEACHER_ACC
ROUNDS. Each target is printed with the measured value, met or not and by how much; values
are means over the repetitions (per repetition in brackets)."""
import sys

rows_file, teacher_acc, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
runs = {}
for line in open(rows_file):
    f = line.rstrip("\n").split("\t")
    if len(f) != 11 or not f[1].isdigit():
        continue
    runs.setdefault((f[0], f[2]), {})[int(f[1])] = f


def num(v):
    return None if v in ("-", "") else float(v)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def show(name, values, goal, ok, unit="pt"):
    per = ", ".join("%.2f" % v for v in values)
    m = mean(values)
    print("%-48s %7.2f %s [%s]  target %s: %s" % (name, m, unit, per, goal,
                                                 "met" if ok(m) else "NOT met"))
    return m


reps = sorted({r for r, _ in runs})
hard = [runs[(r, "hard")] for r in reps if (r, "hard") in runs]
rand = [runs[(r, "random")] for r in reps if (r, "random") in runs]
last = rounds
print("teacher on held-out test items 5000-9999: %.2f %%" % teacher_acc)
ratio = [100 * num(h[last][10]) / teacher_acc for h in hard if last in h]
show("cascade / teacher after round %d (hard loop)" % last, ratio, ">= 98.5 %",
     lambda v: v >= 98.5, "%")
offl = [num(h[k][8]) for h in hard + rand for k in h if h[k][3] == "published" and num(h[k][8])]
lo, hi = (min(offl), max(offl)) if offl else (float("nan"), float("nan"))
print("%-48s %5.2f-%.2f %% (%d published models)  target 9.5-11.5 %%: %s" % (
    "realised offload on held-out, 10 % target", lo, hi, len(offl),
    "met" if offl and lo >= 9.5 and hi <= 11.5 else "NOT met"))
gain = [num(h[last][9]) - num(h[0][9]) for h in hard if last in h]
show("student gain over the seed in %d rounds (hard)" % last, gain, ">= 1.5 pt",
     lambda v: v >= 1.5)
prom = [sum(1 for k in range(1, last + 1) if k in h and h[k][3] == "published") for h in hard]
show("promotions in %d rounds (hard)" % last, [float(p) for p in prom], ">= 4",
     lambda v: v >= 4, "")
up = [num(h[3][10]) - num(x[3][10]) for h, x in zip(hard, rand) if 3 in h and 3 in x]
show("hard - random deployed cascade after round 3", up, ">= 0.5 pt", lambda v: v >= 0.5)
drops = []
for h in hard + rand:
    ks = sorted(h)
    drops.append(max([num(h[a][10]) - num(h[b][10]) for a, b in zip(ks, ks[1:])] + [0.0]))
show("max deployed cascade drop between rounds", drops, "<= 0.1 pt", lambda v: v <= 0.1)
for name, loops in (("hard", hard), ("random", rand)):
    g = [num(h[last][9]) - num(h[0][9]) for h in loops if last in h]
    c = [num(h[last][10]) for h in loops if last in h]
    p = [sum(1 for k in range(1, last + 1) if k in h and h[k][3] == "published") for h in loops]
    print("%s loop: seed student %s %%, after round %d student +%s pt, cascade %s %%, promoted %s of %d"
          % (name, "/".join(h[0][9] for h in loops), last, "/".join("%.2f" % v for v in g),
             "/".join("%.2f" % v for v in c), "/".join(str(v) for v in p), last))
