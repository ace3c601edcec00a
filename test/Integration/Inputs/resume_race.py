"""A resume racing a save: while one thread swaps two whole states A and B
in and out of one directory (renameat2 RENAME_EXCHANGE, the rename a save
makes), muir-run --resume runs on that directory again and again. Each
resume must load one whole state, A or B (its dump bitwise the dump of a
quiet resume of that state: tensors and step counter of one state), or
refuse; never a mix. One process and two ranks (whose opens of the
directory may see different states: refused, or both the same).

  resume_race.py MUIR_RUN WORKDIR
"""
import ctypes
import filecmp
import os
import shutil
import subprocess
import sys
import threading

muir_run, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# The description on one rank and on two (dp=2): one state resumes on both.
descs = {}
for ranks in (1, 2):
    descs[ranks] = os.path.join(work, "race%d.yaml" % ranks)
    with open(descs[ranks], "w") as f:
        f.write("grid: {axes: {dp: %d}}\nparameters:\n" % ranks + "".join(
            "  - {name: p%d, shape: [64, 32], role: attention}\n" % i
            for i in range(6)))


def run(*args, check=True, ranks=1):
    extra = ["--ranks", "2"] if ranks == 2 else []
    r = subprocess.run([muir_run, descs[ranks], "--quiet"] + extra +
                       list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit("muir-run %s failed: %s" % (" ".join(args), r.stderr))
    return r


# Two states that differ in every tensor and in the step counter.
run("--seed", "1", "--steps", "1", "--save-state", os.path.join(work, "A"))
run("--seed", "2", "--steps", "2", "--save-state", os.path.join(work, "B"))
for s in "AB":
    for ranks in (1, 2):
        run("--resume", os.path.join(work, s), "--steps", "1", "--dump",
            os.path.join(work, "want%s%d" % (s, ranks)), ranks=ranks)
names = sorted(os.listdir(os.path.join(work, "wantA1")))
shutil.copytree(os.path.join(work, "A"), os.path.join(work, "S"))
shutil.copytree(os.path.join(work, "B"), os.path.join(work, "X"))

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
S = os.path.join(work, "S").encode()
X = os.path.join(work, "X").encode()
stop = threading.Event()
swaps = [0]


def swapper():
    while not stop.is_set():
        if libc.renameat2(AT_FDCWD, S, AT_FDCWD, X, RENAME_EXCHANGE) != 0:
            sys.exit("renameat2: errno %d" % ctypes.get_errno())
        swaps[0] += 1


t = threading.Thread(target=swapper)
t.start()
counts = {"A": 0, "B": 0, "refused": 0, "mixed": 0}
try:
    for i in range(14):
        ranks = 2 if i % 7 == 6 else 1
        out = os.path.join(work, "got%d" % i)
        r = run("--resume", os.path.join(work, "S"), "--steps", "1",
                "--dump", out, check=False, ranks=ranks)
        if r.returncode != 0:
            if "cannot resume from" not in r.stderr:
                sys.exit("unexpected failure: " + r.stderr)
            counts["refused"] += 1
            continue
        got = sorted(os.listdir(out))
        which = []
        for s in "AB":
            want = os.path.join(work, "want%s%d" % (s, ranks))
            _, differ, errors = filecmp.cmpfiles(out, want, names,
                                                 shallow=False)
            if got == names and not differ and not errors:
                which.append(s)
        counts[which[0] if len(which) == 1 else "mixed"] += 1
finally:
    stop.set()
    t.join()
print("swaps during the resumes: %s" % ("many" if swaps[0] > 1000 else
                                         "few (%d)" % swaps[0]))
print("resumes: %d, whole A or B or refused: %d, mixed: %d" % (
    sum(counts.values()), counts["A"] + counts["B"] + counts["refused"],
    counts["mixed"]))
