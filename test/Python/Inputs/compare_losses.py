"""compare_losses.py A B [TOL]: the losses (JSON step -> loss) of B's
steps equal A's bitwise, or within TOL relative; and both fall."""
import json
import sys

a, b = (json.load(open(f)) for f in sys.argv[1:3])
tol = float(sys.argv[3]) if len(sys.argv) > 3 else None
worst = 0.0
for step, loss in b.items():
    if step not in a:
        sys.exit("step %s: not in %s" % (step, sys.argv[1]))
    err = abs(loss - a[step]) / abs(a[step])
    worst = max(worst, err)
    if (tol is None and loss != a[step]) or (tol is not None and err > tol):
        sys.exit("step %s: %r against %r" % (step, loss, a[step]))
steps = sorted(b, key=int)
if b[steps[-1]] >= b[steps[0]] and len(steps) > 2:
    sys.exit("the loss did not fall: %r -> %r" % (b[steps[0]], b[steps[-1]]))
print("steps %s-%s: %s" % (steps[0], steps[-1], "bitwise equal"
                           if tol is None else "within %g" % tol))
