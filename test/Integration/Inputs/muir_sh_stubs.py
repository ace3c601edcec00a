"""Stand-ins for the commands scripts/muir.sh runs to set up and build,
so that setup-progress.test sees what it prints without installing or
compiling anything: put DIR first on PATH and set

    STUB_MISSING    packages dpkg-query reports as not installed
    STUB_STEPS      build steps the stub ninja runs (0: nothing to do)
    STUB_NINJA_RC   the stub ninja's exit status (default 0)
    STUB_APT_RC     the stub apt-get install's exit status (default 0)
    STUB_PIP_RC     the stub pip install's exit status (default 0)

apt-get install prints apt's status lines (APT::Status-Fd=1: dlstatus
while it downloads 4 files, pmstatus while it installs, 5 stages per
package) among dpkg's own lines, as apt does. ninja prints "[i/N] what"
per step. cmake writes BUILD/build.ninja; BUILD/bin/muir-run says it ran.
VENV (scripts/muir.sh's MUIR_VENV) is a Python environment whose
bin/python, asked to `-m pip install`, prints pip's lines for 4 packages;
its stamp says python/requirements.txt is installed (remove VENV/muir-
requirements.sha256 for an install).

usage: muir_sh_stubs.py DIR BUILD VENV
"""
import hashlib
import os
import stat
import sys

STUBS = {
    "dpkg-query": r"""#!/bin/bash
# dpkg-query -W -f='${Status}' PACKAGE
for p in $STUB_MISSING; do [ "$p" = "${@: -1}" ] && exit 1; done
echo "install ok installed"
""",
    "id": r"""#!/bin/bash
echo 0
""",
    "apt-get": r"""#!/bin/bash
[ "$1" = "update" ] && exit 0
pkgs=()
for a in "$@"; do
  case "$a" in -*|install|APT::*) ;; *) pkgs+=("$a") ;; esac
done
for i in 1 2 3 4; do
  echo "dlstatus:$i:$(( (i - 1) * 25 )).0000:Retrieving file $i of 4"
done
n=${#pkgs[@]} k=0
for p in "${pkgs[@]}"; do
  echo "Selecting previously unselected package $p."
  for stage in Preparing Unpacking "Preparing to configure" Configuring \
               Installed; do
    k=$((k + 1))
    echo "pmstatus:$p:$(( 100 * k / (5 * n) )).0000:$stage $p (amd64)"
  done
  echo "Setting up $p (1.0) ..."
done
if [ "${STUB_APT_RC:-0}" -ne 0 ]; then
  echo "E: Sub-process /usr/bin/dpkg returned an error code (1)" >&2
fi
exit "${STUB_APT_RC:-0}"
""",
    "ninja": r"""#!/bin/bash
# ninja -C DIR [TARGETS]
echo "ninja: Entering directory \`$2'"
n=${STUB_STEPS:-0}
if [ "$n" -eq 0 ]; then echo "ninja: no work to do."; exit 0; fi
for i in $(seq 1 "$n"); do
  echo "[$i/$n] Building CXX object lib/step$i.cpp.o"
  if [ "${STUB_NINJA_RC:-0}" -ne 0 ] && [ "$i" -eq 2 ]; then
    echo "FAILED: lib/step2.cpp.o"
    echo "lib/step2.cpp:1:1: error: stub compile error"
    exit "$STUB_NINJA_RC"
  fi
done
""",
    "cmake": r"""#!/bin/bash
# cmake -G Ninja -S ROOT -B BUILD ...
while [ $# -gt 0 ]; do
  [ "$1" = "-B" ] && { mkdir -p "$2"; : > "$2/build.ninja"; }
  shift
done
""",
}


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP |
             stat.S_IXOTH)


PYTHON = r"""#!/bin/bash
# python -m pip install ... -r FILE: what pip prints, for 4 packages.
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  for p in torch==2.9.1 numpy==2.5.5 transformers==5.25.0 absl-py==2.5.1; do
    echo "Collecting $p"
    echo "  Downloading ${p%%==*}-${p##*==}-py3-none-any.whl (1.0 MB)"
  done
  echo "Installing collected packages: absl-py, numpy, torch, transformers"
  if [ "${STUB_PIP_RC:-0}" -ne 0 ]; then
    echo "ERROR: Could not install packages due to an OSError: stub"
    exit "$STUB_PIP_RC"
  fi
  echo "Successfully installed absl-py-2.5.1 numpy-2.5.5 torch-2.9.1"
  exit 0
fi
exec python3 "$@"
"""


def main():
    stubs, build, venv = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(os.path.join(venv, "bin"), exist_ok=True)
    write(os.path.join(venv, "bin", "python"), PYTHON)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "..", "..")
    with open(os.path.join(root, "python", "requirements.txt"), "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(venv, "muir-requirements.sha256"), "w") as f:
        f.write(stamp + "\n")
    os.makedirs(stubs, exist_ok=True)
    os.makedirs(os.path.join(build, "bin"), exist_ok=True)
    for name, text in STUBS.items():
        write(os.path.join(stubs, name), text)
    write(os.path.join(build, "bin", "muir-run"),
          "#!/bin/bash\necho \"muir-run ran: $*\"\n")


if __name__ == "__main__":
    main()
