"""Each tool's --version against the sources: "<tool> (muir <version>, git
<commit>)" where <version> is CMakeLists.txt's project version and
<commit> a commit of the source checkout ("unknown" outside one), then
LLVM's own lines (the LLVM-based tools) or a note that it has none
(muir-step-runner).

usage: versions.py ROOT TOOL...
"""
import os
import re
import subprocess
import sys

root, tools = sys.argv[1], sys.argv[2:]
with open(os.path.join(root, "CMakeLists.txt")) as f:
    version = re.search(r"project\(muir VERSION ([0-9.]+)", f.read()).group(1)
failures = 0
for tool in tools:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True)
    name = os.path.basename(tool)
    first, _, rest = out.stdout.partition("\n")
    m = re.fullmatch(r"(\S+) \(muir ([0-9.]+), git (\S+)\)", first)
    commit = m.group(3) if m else None
    # A commit of this checkout; "unknown" where there is no git.
    known = subprocess.run(["git", "-C", root, "cat-file", "-e",
                            "%s^{commit}" % commit], capture_output=True)
    in_git = subprocess.run(["git", "-C", root, "rev-parse"],
                            capture_output=True).returncode == 0
    ok = (out.returncode == 0 and m is not None and m.group(1) == name and
          m.group(2) == version and
          (known.returncode == 0 if in_git else commit == "unknown"))
    failures += not ok
    print("%s%s: muir %s (CMakeLists.txt %s), git %s%s; then: %s" % (
        "" if ok else "FAIL ", name, m.group(2) if m else "?", version,
        commit, " (a commit of the checkout)" if in_git else "",
        rest.strip().splitlines()[0] if rest.strip() else "nothing"))
print("FAILED" if failures else "ALL PASSED")
sys.exit(1 if failures else 0)
