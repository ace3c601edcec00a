"""Runs a command and succeeds only if it exits with the given status:
`expect_exit.py STATUS CMD ARGS...`. Its stdout and stderr pass through,
so a RUN line can check both the status and the output."""
import subprocess
import sys

want = int(sys.argv[1])
got = subprocess.call(sys.argv[2:])
if got != want:
    sys.stderr.write("expect_exit: %s exited %d, expected %d\n" %
                     (sys.argv[2], got, want))
sys.exit(0 if got == want else 1)
