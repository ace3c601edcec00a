"""Signals and kills leave nothing of the user's half-written, and nothing
behind: a dump or a state directory replaced under SIGTERM / SIGINT at any
moment is the old one whole or the new one whole, with no staging sibling;
SIGKILL mid-dump leaves the old dump whole and the next run removes the
staging directory (a killed `--ranks N` launcher: Distributed/signals.test);
a relative --save-state saves when $TMPDIR is on another file
system; the JIT writes nothing under $TMPDIR or $HOME; an unwritable
destination fails before the first step."""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "lib"))
import muirtest  # noqa: E402

args = muirtest.parse_args(__doc__)
tmp = os.path.abspath(args.tmp)
run = os.path.abspath(args.muir_run) if os.sep in args.muir_run \
    else args.muir_run

# Large enough that writing the dump takes a while (8 x 3 tensors of 2 MiB).
STEP = os.path.join(tmp, "big.yaml")
with open(STEP, "w") as f:
    f.write("name: big\ngrid: {axes: {dp: 1}}\nparameters:\n")
    for i in range(8):
        f.write("  - {name: w%d, shape: [64, 8192], role: attention}\n" % i)


def tree(d):
    """{relative path: sha256} of every file under d."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in files:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, d)] = hashlib.sha256(f.read()).hexdigest()
    return out


def muir(*extra, env=None, check=True):
    p = subprocess.run([run, STEP, "--steps", "1", "--quiet"] + list(extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    if check and p.returncode != 0:
        sys.exit("FAIL: %s\n%s%s" % (extra, p.stdout, p.stderr))
    return p


def staging_in(parent):
    return [n for n in os.listdir(parent) if ".muir-staging-" in n]


def trial(flag, old_dir, target, sig, delay, foreign):
    """Replaces `target` (a copy of old_dir) with --seed 2's output while
    `sig` arrives `delay` s after the staging directory appears; returns
    'old' or 'new' (what target holds) and whether anything was left."""
    parent = os.path.dirname(target)
    if os.path.exists(target):
        shutil.rmtree(target)
    shutil.copytree(old_dir, target)
    p = subprocess.Popen([run, STEP, "--steps", "1", "--quiet", "--seed", "2",
                          flag, target], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    mine = ".muir-staging-%d-" % p.pid
    while not any(mine in n for n in staging_in(parent)) and \
            p.poll() is None and time.time() < deadline:
        time.sleep(0.0005)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(sig)
    p.wait()
    return tree(target), staging_in(parent)


# Seconds from the staging directory's appearance to the signal.
DELAYS = (0, 0.002, 0.01, 0.03, 0.1)


def check_replacement(flag, sigs):
    base = os.path.join(tmp, flag.strip("-"))
    old_dir, new_dir = base + "-old", base + "-new"
    muir("--seed", "1", flag, old_dir)
    muir("--seed", "2", flag, new_dir)
    old, new = tree(old_dir), tree(new_dir)
    if flag == "--dump":
        # A file of the user's in the dump directory survives every
        # replacement (carried over as a hard link).
        with open(os.path.join(old_dir, "notes.txt"), "w") as f:
            f.write("mine\n")
        old = tree(old_dir)
        new = dict(new, **{"notes.txt": old["notes.txt"]})
    parent = os.path.join(base + "-trials")
    os.makedirs(parent)
    target = os.path.join(parent, "out")
    for sig in sigs:
        seen = {"old": 0, "new": 0}
        bad = []
        for delay in DELAYS:
            got, left = trial(flag, old_dir, target, sig, delay, flag == "--dump")
            if got == old:
                seen["old"] += 1
            elif got == new:
                seen["new"] += 1
            else:
                bad.append("delay %g: a mix (%d files)" % (delay, len(got)))
            if left or sorted(os.listdir(parent)) != ["out"]:
                bad.append("delay %g: left %s" % (delay, sorted(os.listdir(parent))))
        name = signal.Signals(sig).name
        print("%s %s: %d signals during the replacement, each leaves the old "
              "or the new directory whole, nothing beside it: %s"
              % (flag, name, len(DELAYS),
                 "ok" if not bad else "FAIL " + "; ".join(bad)))
        print("%s %s: old %d new %d" % (flag, name, seen["old"], seen["new"]))
    return old_dir, old, new, target, parent


old_dir, old, new, target, parent = check_replacement(
    "--dump", [signal.SIGTERM, signal.SIGINT])
check_replacement("--save-state", [signal.SIGTERM])

# SIGKILL cannot be caught: the dump is the old one whole (killed while the
# staging directory fills) or the new one whole (killed after the exchange
# of names, while the old one, under the staging name, is being removed);
# the staging directory stays until the next run into that place removes
# it. Killed as soon as the staging directory appears, the old one is
# expected; a fast machine may finish the 48 MiB first.
got, left = trial("--dump", old_dir, target, signal.SIGKILL, 0, True)
print("--dump SIGKILL: the old or the new dump whole: %s, staging left: %d"
      % ("ok" if got in (old, new) else "FAIL", len(left)))
muir("--dump", target)
print("next --dump: staging removed: %s"
      % ("ok" if not staging_in(parent) else "FAIL %s" % staging_in(parent)))

# A relative --save-state with $TMPDIR on another file system.
shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
other = tempfile_dir = None
if shm:
    other = os.path.join(shm, "muir-signals-%d" % os.getpid())
    os.makedirs(other, exist_ok=True)
work = os.path.join(tmp, "relative")
os.makedirs(work)
env = dict(os.environ, TMPDIR=other or tmp)
p = subprocess.run([run, STEP, "--steps", "1", "--quiet", "--save-state",
                    "st"], cwd=work, env=env, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, universal_newlines=True)
crosses = other and os.stat(other).st_dev != os.stat(work).st_dev
print("relative --save-state, $TMPDIR on %s file system: %s"
      % ("another" if crosses else "the same",
         "saved" if p.returncode == 0 and
         os.path.exists(os.path.join(work, "st", "muir-state.json"))
         else "FAIL " + p.stderr))

# The JIT writes nothing the user did not ask for.
scratch, home = os.path.join(tmp, "scratch"), os.path.join(tmp, "home")
os.makedirs(scratch)
os.makedirs(home)
muir(env=dict(os.environ, TMPDIR=scratch, HOME=home))
written = os.listdir(scratch) + os.listdir(home)
print("JIT files under $TMPDIR and $HOME: %s"
      % ("none" if not written else "FAIL %s" % written))
if other:
    shutil.rmtree(other, ignore_errors=True)

# An unwritable destination fails before the first step runs.
blocker = os.path.join(tmp, "a-file")
with open(blocker, "w") as f:
    f.write("x")
for flag in ("--save-state", "--dump"):
    p = subprocess.run([run, STEP, "--steps", "1", flag,
                        os.path.join(blocker, "sub")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    print("%s under a file: exit %d, steps run %d, %s"
          % (flag, p.returncode, p.stdout.count("step 1:"),
             p.stderr.strip().split("\n")[0].replace(tmp, "TMP")))
