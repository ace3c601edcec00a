"""muir-run --ranks N ended by a signal: SIGTERM or SIGINT to muir-run (not
to its process group) while its ranks run; within a few seconds no process
of the run is left (muir-run forwards the signal to mpirun, which ends the
ranks, and kills whatever remains after 5 s). Rank 1 hangs before step 2
(MUIR_TEST_FAULT, with the collective watchdog's timeout far away), so
without the forwarding its rank and mpirun would stay. A third run stops
mpirun (SIGSTOP) first, so that it cannot pass the signal on: muir-run's
own fallback must kill the ranks and mpirun. A fourth kills muir-run with
SIGKILL, which it cannot see: mpirun ends with it (PR_SET_PDEATHSIG) and
the ranks watch it themselves (a pidfd), so nothing of the run is left
either."""
import argparse
import os
import signal
import subprocess
import sys
import time

from muirtest import processes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--muir-run", required=True)
    p.add_argument("--tmp", required=True)
    p.add_argument("--step", required=True)
    args = p.parse_args()
    os.makedirs(args.tmp, exist_ok=True)
    env = dict(os.environ, MUIR_TEST_FAULT="hang:1:2",
               MUIR_RT_COLLECTIVE_TIMEOUT="600")
    for sig, stuck in ((signal.SIGTERM, False), (signal.SIGINT, False),
                       (signal.SIGTERM, True), (signal.SIGKILL, False)):
        label = sig.name + (" with mpirun stopped" if stuck else "")
        marker = os.path.join(args.tmp, "run-%s-%d" % (sig.name, stuck))
        proc = subprocess.Popen(
            [args.muir_run, args.step, "--ranks", "2", "--steps", "3",
             "--quiet", "--dump", marker],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Wait for both ranks to be up (three processes beside muir-run:
        # mpirun and two ranks), then a little for them to reach the hang.
        # The count the wait ended on, not a second look: a rank that
        # re-executes itself as it starts (muir-run's huge-pages restart)
        # has no readable command line for a moment, which a busy machine
        # makes long enough to see.
        deadline = time.time() + 60
        started = len(processes(marker))
        while started < 4 and time.time() < deadline:
            time.sleep(0.2)
            started = len(processes(marker))
        time.sleep(3)
        if stuck:
            for pid in processes(marker):
                with open("/proc/%d/comm" % pid) as f:
                    if f.read().strip() == "mpirun":
                        os.kill(pid, signal.SIGSTOP)
        proc.send_signal(sig)
        sent = time.time()
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        ended = time.time() - sent
        # Everything of the run gone within 8 s of the signal.
        while processes(marker) and time.time() - sent < 8:
            time.sleep(0.2)
        left = processes(marker)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        print("%s: %d processes ran; muir-run exited %s after the signal; "
              "%d left" % (label, started, rc, len(left)))
        sys.stdout.flush()
        # Killed by a signal, Popen reports -signal; muir-run itself
        # exits 128 + the signal it forwarded.
        want = -sig if sig == signal.SIGKILL else 128 + sig
        ok = started >= 4 and rc == want and not left and ended < 8
        print("%s: %s" % (label, "ok" if ok else "FAIL"))


if __name__ == "__main__":
    main()
