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
import time


def tunables_of(raw):
    """GLIBC_TUNABLES in a process's /proc/PID/environ. glibc, parsing the
    variable as the process starts, overwrites each ':' between tunables
    with a NUL in place, so the tunables after the first read as entries
    of their own ("glibc.malloc.hugetlb=1" after "GLIBC_TUNABLES=..."):
    they are joined back."""
    entries = raw.split(b"\0")
    for i, e in enumerate(entries):
        if e.startswith(b"GLIBC_TUNABLES="):
            parts = [e[len(b"GLIBC_TUNABLES="):]]
            for more in entries[i + 1:]:
                if not more.startswith(b"glibc."):
                    break
                parts.append(more)
            return b":".join(parts).decode()
    return "(unset)"


def tunables_seen(muir_run, env):
    """GLIBC_TUNABLES of a muir-run process once it runs: a long run is
    watched (/proc/PID/environ) until the restarted environment shows
    glibc.malloc.hugetlb, or for 3 s (a restart is the first thing
    muir-run does), then stopped; so a busy machine cannot end the run
    between two reads."""
    p = subprocess.Popen([muir_run, "--steps", "1000000", "--quiet"],
                         env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    seen = None
    deadline = time.monotonic() + 3
    try:
        while p.poll() is None and time.monotonic() < deadline:
            # While the process replaces itself (execv) its environ may be
            # unreadable or empty for a moment: such a read tells nothing.
            try:
                with open("/proc/%d/environ" % p.pid, "rb") as f:
                    raw = f.read()
            except OSError:
                continue
            if not raw:
                continue
            seen = tunables_of(raw)
            if "hugetlb" in seen:
                break
            time.sleep(0.01)
    finally:
        p.terminate()
        p.wait()
    return seen


def dump(muir_run, env, directory):
    """The tensors after 3 steps, as bytes by name."""
    if subprocess.run([muir_run, "--steps", "3", "--quiet", "--dump",
                       directory], env=env,
                      stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("muir-run failed")
    return {n: open(os.path.join(directory, n), "rb").read()
            for n in sorted(os.listdir(directory))}


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
            seen = tunables_seen(muir_run, env)
            if not offered and label in ("default", "appended"):
                seen += " (no transparent huge pages here: not restarted)"
            print("%s: %s" % (label, seen))
            dumps[label] = dump(muir_run, env,
                                os.path.join(tmp, label.replace(" ", "_")))
    first = dumps["default"]
    same = all(d == first for d in dumps.values())
    print("dumps bitwise equal: %s (%d tensors)" % (same, len(first)))


if __name__ == "__main__":
    main()
