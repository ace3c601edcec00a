"""Stand-ins for the commands scripts/muir.sh runs to set up and build,
so that setup-progress.test sees what it prints without installing or
compiling anything: put DIR first on PATH and set

    STUB_MISSING    packages dpkg-query reports as not installed
    STUB_STEPS      build steps the stub ninja runs (0: nothing to do)
    STUB_NINJA_RC   the stub ninja's exit status (default 0)
    STUB_APT_RC     the stub apt-get install's exit status (default 0)

apt-get install prints apt's status lines (APT::Status-Fd=1: dlstatus
while it downloads 4 files, pmstatus while it installs, 5 stages per
package) among dpkg's own lines, as apt does. ninja prints "[i/N] what"
per step. cmake writes BUILD/build.ninja; BUILD/bin/muir-run says it ran.

usage: muir_sh_stubs.py DIR BUILD
"""
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


def main():
    stubs, build = sys.argv[1], sys.argv[2]
    os.makedirs(stubs, exist_ok=True)
    os.makedirs(os.path.join(build, "bin"), exist_ok=True)
    for name, text in STUBS.items():
        write(os.path.join(stubs, name), text)
    write(os.path.join(build, "bin", "muir-run"),
          "#!/bin/bash\necho \"muir-run ran: $*\"\n")


if __name__ == "__main__":
    main()
