#!/usr/bin/env bash
# One entry for a fresh machine: installs what is missing, builds, then
#   scripts/muir.sh run [muir-run args]   runs the main job (the embedded
#                                         default example unless given input)
#   scripts/muir.sh test                  runs every test
#   scripts/muir.sh bench                 runs the benchmarks
#   scripts/muir.sh build                 only sets up and builds
# Quiet when everything is already in place.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MUIR_BUILD_DIR:-$root/build}"
cmd="${1:-run}"
[ $# -gt 0 ] && shift

# Debian packages the build, the runtime, the tests and the benchmarks use.
packages=(cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools
          libopenblas-dev libopenmpi-dev openmpi-bin libgtest-dev
          python3 python3-numpy python3-torch pkg-config)

setup() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "muir: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {
  if [ ! -f "$build/build.ninja" ]; then
    cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_LINK_MLIR_DYLIB=ON \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >"$build.cmake.log" 2>&1 ||
      { cat "$build.cmake.log" >&2; exit 1; }
  fi
  local log
  log="$(mktemp)"
  if ! ninja -C "$build" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}

run_tests() {
  local log rc=0
  log="$(mktemp)"
  /usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$log" || rc=$?
  # A closing line in the plain form CI reads, from lit's own summary.
  python3 - "$log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def count(*names):
    return sum(int(m) for n in names
               for m in re.findall(r"^\s*%s\s*:\s*(\d+)" % n, text, re.M))
passed = count("Passed", "Expectedly Failed")
failed = count("Failed", "Unexpectedly Passed", "Unresolved", "Timed Out")
skipped = count("Unsupported", "Skipped", "Excluded")
print("muir: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
PY
  rm -f "$log"
  return $rc
}

case "$cmd" in
  run)   setup; build; exec "$build/bin/muir-run" "$@" ;;
  test)  setup; build; run_tests ;;
  bench) setup; build
         /usr/bin/python3 "$root/bench/run.py" --build "$build" "$@"
         echo
         /usr/bin/python3 "$root/bench/compile_scale.py" --build "$build"
         echo
         /usr/bin/python3 "$root/bench/passes.py" --build "$build"
         echo
         /usr/bin/python3 "$root/bench/ns_sets.py" --build "$build"
         echo
         /usr/bin/python3 "$root/bench/moe.py" --build "$build"
         echo
         /usr/bin/python3 "$root/bench/determinism.py" --build "$build"
         echo
         exec /usr/bin/python3 "$root/bench/ns_modes.py" --build "$build" ;;
  build) setup; build ;;
  *) echo "usage: scripts/muir.sh run|test|bench|build [args]" >&2; exit 2 ;;
esac
