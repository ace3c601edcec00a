"""Multi-rank runs end cleanly.

1. `muir-run --ranks 4 ... | head -1`: once the reader of stdout is gone,
   muir-run stops the run quietly (exit 141, 128 + SIGPIPE, nothing on
   stderr), every rank exits within 8 s, and nothing of the run is left in
   /dev/shm (MPI's shared-memory segments live in a folder of the launch's,
   /dev/shm/muir-mpi-<pid>-*, removed when mpirun ends).
2. A rank killed (SIGKILL, which no cleanup sees) while it saves a state,
   after staging it: the launcher removes the staging directory once every
   rank has ended, so none is left beside the state under any timing.

  closed_stdout.py MUIR_RUN WORKDIR
"""
import os
import subprocess
import sys
import time

from muirtest import processes

muir_run, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
desc = os.path.join(work, "closed-stdout-dp4.yaml")
with open(desc, "w") as f:
    f.write("grid: {axes: {dp: 4}}\nparameters:\n"
            "  - {name: w, shape: [64, 32], role: attention}\n"
            "  - {name: v, shape: [64, 32], role: attention}\n")


def shm():
    return set(os.listdir("/dev/shm"))


before = shm()
p = subprocess.Popen([muir_run, desc, "--ranks", "4", "--steps", "100000"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
first = p.stdout.readline().decode()
p.stdout.close()
closed = time.time()
try:
    rc = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "none (still running after 60 s)"
err = p.stderr.read().decode()
while processes(desc) and time.time() - closed < 8:
    time.sleep(0.2)
left = processes(desc)
for pid in left:
    os.kill(pid, 9)
# The run's shared memory is all in its launch's folder (other tests may
# run MPI jobs meanwhile: only this launch's folder is looked for).
new = sorted(n for n in shm() - before
             if n.startswith("muir-mpi-%d-" % p.pid))
print("first line: %s" % first.strip().replace(desc, "DESC"))
print("closed stdout: exit %s, %d stderr line(s), %d process(es) left, "
      "its shared memory left in /dev/shm: %s" % (rc, len(err.splitlines()), len(left),
                               ", ".join(new) or "nothing"))
for line in err.splitlines():
    print("  stderr: " + line)

# 2. Rank 0 killed while saving, its staging directory made.
state = os.path.join(work, "state")
desc2 = os.path.join(work, "closed-stdout-dp2.yaml")
with open(desc2, "w") as f:
    f.write(open(desc).read().replace("dp: 4", "dp: 2"))
r = subprocess.run([muir_run, desc2, "--ranks", "2", "--steps", "1",
                    "--quiet", "--save-state", state],
                   env=dict(os.environ, MUIR_TEST_FAULT="kill:0:-1"),
                   capture_output=True, text=True)
siblings = sorted(n for n in os.listdir(work) if "muir-staging" in n)
print("rank 0 killed while saving: exit %s, state written: %s, staging "
      "directories left: %d" % ("non-zero" if r.returncode else "0",
                                "yes" if os.path.exists(state) else "no",
                                len(siblings)))
