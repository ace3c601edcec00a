"""A damaged compiled-step cache is detected before it is loaded and the
step compiled again: a library cut short (as a killed compile or a full
disk leaves it), an empty one, one without its record, one whose record
disagrees, a record that is damaged; open_step on a cut library is an
error, not a SIGBUS. Each run's results are compared bitwise with a step
compiled without the cache (an independent compile of the same source)."""
import glob
import os
import sys
import tempfile

import numpy as np

import muir
from muirtest import run_seeded_step as run

SOURCE = """name: cache
grid: {axes: {dp: 1}}
parameters:
  - {name: w, shape: [32, 16], role: attention}
"""


with muir.compile(SOURCE, "cache.yaml") as plain:
    want = run(plain)

cache = tempfile.mkdtemp(prefix="muir-cache-damage-")
options = {"cache-dir": cache}


def entry():
    libs = sorted(glob.glob(os.path.join(cache, "muir-step-*.so")))
    return libs[0] if libs else None


def compile_and_check(what):
    with muir.compile(SOURCE, "cache.yaml", options) as step:
        got = run(step)
    lib = entry()
    ok = lib is not None and os.path.exists(lib + ".record") and \
        (size is None or os.path.getsize(lib) == size)
    print("%s: entry whole: %s, bitwise as without the cache: %s"
          % (what, "yes" if ok else "NO", "yes" if np.array_equal(got, want)
             else "NO"))


size = None
compile_and_check("first compile")
lib = entry()
size = os.path.getsize(lib)
others = sorted(os.path.basename(p) for p in glob.glob(os.path.join(cache, "*")))
print("cache entry files:", ", ".join(n.replace(os.path.basename(lib)[:-3],
                                                 "KEY") for n in others))
compile_and_check("loaded from the cache")

for what, damage in [
        ("cut to half", lambda: os.truncate(lib, size // 2)),
        ("cut to 100 bytes", lambda: os.truncate(lib, 100)),
        ("empty", lambda: os.truncate(lib, 0)),
        ("record removed", lambda: os.remove(lib + ".record")),
        ("record damaged", lambda: open(lib + ".record", "w").write("{")),
        ("one byte changed", lambda: open(lib, "r+b").write(b"\x7fELG"))]:
    damage()
    compile_and_check(what)

# Opened by path (no record beside it): the ELF check alone.
cut = os.path.join(cache, "cut.so")
with open(lib, "rb") as f:
    data = f.read()
for name, n in [("half", len(data) // 2), ("header", 40), ("empty", 0)]:
    with open(cut, "wb") as f:
        f.write(data[:n])
    try:
        muir.open_step(cut)
        print("open_step on a library cut to its %s: opened?!" % name)
    except muir.MuirError as e:
        print("open_step on a library cut to its %s: %s"
              % (name, str(e).replace(cut, "CUT")))
