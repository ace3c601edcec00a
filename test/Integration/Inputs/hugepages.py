"""muir-run restarts itself once with glibc's malloc on transparent huge
pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) where the kernel offers them:
its process (same pid) runs with the tunable, appended to what the caller
set; MUIR_HUGEPAGES=0 or a caller's own glibc.malloc.hugetlb leaves the
environment alone. The step's results are bitwise the same either way.

Prints one line per case: what the running muir-run's environment held.
"""
import os
import subprocess
import sys
import tempfile


def tunables_seen(muir_run, env, dump):
    """GLIBC_TUNABLES of the muir-run process once it runs (the last value
    read from /proc/PID/environ before it ends)."""
    p = subprocess.Popen([muir_run, "--steps", "3", "--quiet", "--dump",
                          dump], env=env, stdout=subprocess.DEVNULL)
    seen = None
    while p.poll() is None:
        # While the process replaces itself (execv) its environ may be
        # unreadable or empty for a moment: such a read tells nothing, and
        # the next one is taken.
        try:
            with open("/proc/%d/environ" % p.pid, "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if not raw:
            continue
        values = [e[len(b"GLIBC_TUNABLES="):].decode()
                  for e in raw.split(b"\0")
                  if e.startswith(b"GLIBC_TUNABLES=")]
        seen = values[0] if values else "(unset)"
        if "hugetlb" in seen:
            break
    if p.wait() != 0:
        sys.exit("muir-run failed")
    return seen


def main():
    muir_run = sys.argv[1]
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        offered = "[never]" not in f.read()
    base = {k: v for k, v in os.environ.items()
            if k not in ("GLIBC_TUNABLES", "MUIR_HUGEPAGES")}
    cases = [("default", {}),
             ("appended", {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}),
             ("MUIR_HUGEPAGES=0", {"MUIR_HUGEPAGES": "0"}),
             ("caller's own", {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})]
    dumps = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in cases:
            env = dict(base, **extra)
            dump = os.path.join(tmp, label.replace(" ", "_"))
            seen = tunables_seen(muir_run, env, dump)
            if not offered and label in ("default", "appended"):
                seen += " (no transparent huge pages here: not restarted)"
            print("%s: %s" % (label, seen))
            dumps[label] = {n: open(os.path.join(dump, n), "rb").read()
                            for n in sorted(os.listdir(dump))}
    first = dumps["default"]
    same = all(d == first for d in dumps.values())
    print("dumps bitwise equal: %s (%d tensors)" % (same, len(first)))


if __name__ == "__main__":
    main()
