"""The compiled-step cache runs only what this user built.

Each case compiles one small step with cache-dir in a child process (whose
stderr is kept) and compares its result bitwise with a step compiled
without the cache. Cases: a new cache directory is made 0700; a directory
writable by others, or owned by another user, is not used (one warning);
an entry planted by another user, or writable by others, is never loaded
(its constructor would write a marker file); entries that are a FIFO, a
link to /dev/zero or a directory are skipped with a warning and the step
compiled again; temporaries of dead processes are swept, a live one's
kept; a linker that fails ("No space left on device") gives one muir line
and the step runs from the JIT; a killed compile leaves no linker
running. Runs as root in CI: "another user" is nobody (chown)."""
import glob
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np

import muir
from muirtest import run_seeded_step as run

SOURCE = """name: trust
grid: {axes: {dp: 1}}
parameters:
  - {name: w, shape: [32, 16], role: attention}
"""
NOBODY = 65534


if len(sys.argv) > 2 and sys.argv[1] == "--child":
    # One compile with the cache; prints whether the result is bitwise the
    # one compiled without it (saved by the parent).
    with muir.compile(SOURCE, "trust.yaml", {"cache-dir": sys.argv[2]}) as s:
        got = run(s)
    want = np.load(sys.argv[3])
    print("bitwise: %s" % ("yes" if np.array_equal(got, want) else "NO"))
    sys.exit(0)

work = tempfile.mkdtemp(prefix="muir-cache-trust-")
os.chmod(work, 0o755)
with muir.compile(SOURCE, "trust.yaml") as plain:
    np.save(os.path.join(work, "want.npy"), run(plain))


def child(cache, env=None, what=""):
    r = subprocess.run([sys.executable, __file__, "--child", cache,
                        os.path.join(work, "want.npy")],
                       capture_output=True, text=True, timeout=120,
                       env=env)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    shown = [l.replace(work, "WORK").replace(cache, "CACHE") for l in lines]
    print("%s: exit %d, %s, %d stderr line(s)%s" % (
        what, r.returncode, r.stdout.strip() or "no result", len(lines),
        "".join("\n  " + l for l in shown)))
    return r


def entries(cache):
    return sorted(glob.glob(os.path.join(cache, "muir-step-*.so")))


# A new cache directory (and its folder) is made, 0700.
cache = os.path.join(work, "new", "cache")
child(cache, what="new directory")
print("new directory mode: %o, entries: %d" % (
    stat.S_IMODE(os.stat(cache).st_mode), len(entries(cache))))
entry = entries(cache)[0]
key = os.path.basename(entry)[len("muir-step-"):-len(".so")]

# A directory others can write: not used, one warning, no entry.
shared = os.path.join(work, "shared")
os.mkdir(shared)
os.chmod(shared, 0o777)
child(shared, what="world-writable directory")
print("entries in it: %d" % len(entries(shared)))
# One owned by another user.
theirs = os.path.join(work, "theirs")
os.mkdir(theirs, 0o755)
os.chown(theirs, NOBODY, NOBODY)
child(theirs, what="directory of another user")

# A library planted under the entry's name with a record that matches it
# (key, size, hash: anyone can compute them): its constructor would write a
# marker. Loaded only if it were this user's own, writable by no one else.
marker = os.path.join(work, "planted-ran")
evil_c = os.path.join(work, "evil.c")
with open(evil_c, "w") as f:
    f.write('#include <stdio.h>\n__attribute__((constructor)) static void '
            'f(void) { FILE *m = fopen("%s", "w"); if (m) fclose(m); }\n'
            % marker)
evil = os.path.join(work, "evil.so")
subprocess.run(["cc", "-shared", "-fPIC", "-o", evil, evil_c], check=True)


# The planted library is linked by muir itself (a `cc` on PATH that links
# it instead of the step), so its record is one muir wrote: key, size and
# hash all match, as an attacker can make them.
evil_bin = os.path.join(work, "evil-bin")
os.mkdir(evil_bin)
with open(os.path.join(evil_bin, "cc"), "w") as f:
    f.write('#!/bin/sh\nexec /usr/bin/cc -shared -fPIC -o "$3" %s\n' % evil_c)
os.chmod(os.path.join(evil_bin, "cc"), 0o755)


def remove(*paths):
    for p in paths:
        if os.path.isdir(p) and not os.path.islink(p):
            os.rmdir(p)
        elif os.path.lexists(p):
            os.remove(p)


def plant(owner, mode):
    remove(entry, entry + ".record")
    r = subprocess.run([sys.executable, __file__, "--child", cache,
                        os.path.join(work, "want.npy")], capture_output=True,
                       env=dict(os.environ,
                                PATH=evil_bin + ":" + os.environ["PATH"]))
    assert os.path.exists(entry) and os.path.exists(entry + ".record"), \
        r.stderr
    remove(marker)
    for p in (entry, entry + ".record"):
        os.chown(p, owner, owner)
        os.chmod(p, mode)


# The control: this user's own file, 0644, passes the checks (and is
# loaded: the constructor runs, then it is found to be no step).
for what, owner, mode in [("planted, this user's own (control)",
                           os.getuid(), 0o644),
                          ("planted by another user", NOBODY, 0o644),
                          ("planted, writable by others", os.getuid(), 0o666),
                          ("planted, writable by the group", os.getuid(),
                           0o664)]:
    plant(owner, mode)
    child(cache, what=what)
    print("  its constructor ran: %s" % ("YES" if os.path.exists(marker)
                                         else "no"))

# Entries that are not regular files: skipped, compiled again.
for what, make in [
        ("entry is a FIFO", lambda: os.mkfifo(entry)),
        ("entry links to /dev/zero", lambda: os.symlink("/dev/zero", entry)),
        ("entry is a directory", lambda: os.mkdir(entry))]:
    remove(entry, entry + ".record")
    child(cache, what="a compile that writes the entry")
    os.remove(entry)
    make()
    child(cache, what=what)

# Temporaries: a dead process's are swept by the next write, a live one's
# kept.
remove(entry, entry + ".record")
dead = subprocess.Popen(["true"])
dead.wait()
stale = [os.path.join(cache, "muir-step-tmp-%d-abcdefgh%s" % (dead.pid, ext))
         for ext in (".o", ".so.tmp", ".record.tmp")]
live = os.path.join(cache, "muir-step-tmp-%d-abcdefgh.o" % os.getpid())
for p in stale + [live]:
    open(p, "w").close()
child(cache, what="a compile beside temporaries")
print("dead process's temporaries left: %d, live process's kept: %s" % (
    sum(os.path.exists(p) for p in stale), "yes" if os.path.exists(live)
    else "NO"))
os.remove(live)

# A linker that fails as on a full disk: one muir line, the JIT runs.
fake = os.path.join(work, "bin")
os.mkdir(fake)
with open(os.path.join(fake, "cc"), "w") as f:
    f.write("#!/bin/sh\necho '/usr/bin/ld: final link failed: No space left "
            "on device' >&2\necho 'collect2: error: ld returned 1 exit "
            "status' >&2\nexit 1\n")
os.chmod(os.path.join(fake, "cc"), 0o755)
full = os.path.join(work, "full")
env = dict(os.environ, PATH=fake + ":" + os.environ["PATH"])
child(full, env=env, what="full disk")
print("entries: %d, temporaries: %d" % (len(entries(full)),
                                        len(os.listdir(full))))

# A compile killed while linking: the linker (and what it started) dies
# with it, the temporaries are swept by the next compile.
with open(os.path.join(fake, "cc"), "w") as f:
    f.write("#!/bin/sh\necho $$ > %s/cc.pid\nsleep 300 &\necho $! > "
            "%s/sleep.pid\nwait\n" % (work, work))
killed = os.path.join(work, "killed")
p = subprocess.Popen([sys.executable, __file__, "--child", killed,
                      os.path.join(work, "want.npy")], env=env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(600):
    if os.path.exists(os.path.join(work, "sleep.pid")):
        break
    time.sleep(0.1)
time.sleep(0.2)
p.send_signal(signal.SIGKILL)
p.wait()
pids = [int(open(os.path.join(work, n)).read()) for n in ("cc.pid",
                                                          "sleep.pid")]


def running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


for _ in range(50):
    if not any(running(q) for q in pids):
        break
    time.sleep(0.1)
print("after SIGKILL: linker running: %s, its child running: %s" % tuple(
    "YES" if running(q) else "no" for q in pids))
left = len(os.listdir(killed))
child(killed, what="the next compile")
print("temporaries of the killed compile: %d before, %d after" % (
    left, len([n for n in os.listdir(killed) if "tmp" in n])))
shutil.rmtree(work, ignore_errors=True)
