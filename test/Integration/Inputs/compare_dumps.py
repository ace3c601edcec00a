"""Compares the .npy files of several dump directories byte for byte."""
import filecmp
import os
import sys

dirs = sys.argv[1:]
names = sorted(f for f in os.listdir(dirs[0]) if f.endswith(".npy"))
for d in dirs[1:]:
    other = sorted(f for f in os.listdir(d) if f.endswith(".npy"))
    if other != names:
        sys.exit("FAIL: %s has %s, %s has %s" % (dirs[0], names, d, other))
    for n in names:
        if not filecmp.cmp(os.path.join(dirs[0], n), os.path.join(d, n),
                           shallow=False):
            sys.exit("FAIL: %s differs between %s and %s" % (n, dirs[0], d))
print("%d tensors bitwise equal in %d runs" % (len(names), len(dirs)))
