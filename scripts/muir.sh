#!/usr/bin/env bash
# One entry for a fresh machine: installs what is missing, builds, then
#   scripts/muir.sh run [muir-run args]   runs the main job (the embedded
#                                         default example unless given input)
#   scripts/muir.sh test                  runs every test, then the
#                                         sanitizer subset (see below)
#   scripts/muir.sh bench                 runs the benchmarks
#   scripts/muir.sh build                 only sets up and builds
#   scripts/muir.sh sanitize              builds everything with ASan and
#                                         UBSan (build-asan/), runs the lit
#                                         suite there
#   scripts/muir.sh fuzz [SECONDS]        runs each fuzz target (fuzz/) for
#                                         SECONDS (default 30)
#   scripts/muir.sh python [ARGS]         runs the project's Python (.venv/)
#                                         with the `muir` package (python/)
#                                         over this build, e.g.
#                                         examples/torch/train_moe.py
#   scripts/muir.sh env                   prints the exports that make
#                                         `python` the project's and
#                                         `import muir` work in a shell
# Quiet when everything is already in place; otherwise says what it
# installs and shows the build's progress (one line on a terminal, a few
# plain lines in a log).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MUIR_BUILD_DIR:-$root/build}"
# The sanitizer builds (clang, ASan + UBSan), each in its own folder:
# build-sanitize holds the fuzz targets and the runtime's unit tests (what
# `test` replays and `fuzz` runs), build-asan the whole project.
sanitize_build="${MUIR_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
asan_build="${MUIR_ASAN_BUILD_DIR:-$root/build-asan}"
fuzzers=(description_fuzzer hf_config_fuzzer npy_fuzzer state_manifest_fuzzer
         dialect_fuzzer)
cmd="${1:-run}"
[ $# -gt 0 ] && shift

# Debian packages the build, the runtime, the tests and the benchmarks use.
# libdnnl-dev's CMake package needs OpenCL's (Debian's oneDNN is built with
# its OpenCL GPU runtime) and only recommends ocl-icd-opencl-dev, which
# --no-install-recommends leaves out: named here.
packages=(cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools
          libopenblas-dev libopenmpi-dev openmpi-bin libgtest-dev libdnnl-dev
          ocl-icd-opencl-dev python3 pkg-config clang-22 libclang-rt-22-dev)
# The Python environment of the tests, the benchmarks and muir.torch: a
# virtual environment (ignored by git) with the pinned PyPI packages of
# python/requirements.txt (torch 2.x, transformers, emerging-optimizers,
# numpy). emerging-optimizers needs Python >= 3.12, which Debian 12 lacks:
# the machine's own (python3.12 on PATH, or pyenv's) makes it, or
# MUIR_PYTHON names one.
venv="${MUIR_VENV:-$root/.venv}"
requirements="$root/python/requirements.txt"

# Progress of a long step, on stderr, read from "PERCENT<TAB>TEXT" lines:
# on a terminal one line, rewritten in place and cleared at the end;
# otherwise (a CI log) a plain line each time another tenth of the way is
# reached. Creates the file SHOWN if there was anything to show: a step
# with nothing to do shows nothing.
show_progress() {
  local shown="$1" percent text tenth=-1 cols=80 tty=0
  if [ -t 2 ]; then
    tty=1
    cols="$(tput cols 2>/dev/null || true)"
    [[ "$cols" =~ ^[0-9]+$ ]] && [ "$cols" -ge 20 ] || cols=80
  fi
  while IFS=$'\t' read -r percent text; do
    [ -e "$shown" ] || : >"$shown"
    if [ $tty -eq 1 ]; then
      printf '\r\033[K%s' "${text:0:$((cols - 1))}" >&2
    elif [ $((percent / 10)) -gt $tenth ]; then
      tenth=$((percent / 10))
      echo "$text" >&2
    fi
  done
  if [ $tty -eq 1 ] && [ -e "$shown" ]; then
    printf '\r\033[K' >&2
  fi
  return 0
}

# apt's status lines (APT::Status-Fd: "dlstatus:N:PERCENT:TEXT" while
# downloading, "pmstatus:PACKAGE:PERCENT:TEXT" while installing) as
# progress: downloads the first half of the way, installing the second.
apt_progress() {
  local kind item percent text
  while IFS=: read -r kind item percent text; do
    percent="${percent%%.*}"
    [[ "$percent" =~ ^[0-9]+$ ]] || continue
    case "$kind" in
      dlstatus) printf '%d\tmuir: installing: %d%% %s\n' $((percent / 2)) \
                  $((percent / 2)) "$text" ;;
      pmstatus) printf '%d\tmuir: installing: %d%% %s\n' \
                  $((50 + percent / 2)) $((50 + percent / 2)) "$text" ;;
    esac
  done
  return 0
}

# ninja's status lines ("[n/N] what", NINJA_STATUS is set below) as
# progress.
ninja_progress() {
  local what="$1" line
  while IFS= read -r line; do
    if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\]\ (.*) ]]; then
      printf '%d\tmuir: building %s [%d/%d] %s\n' \
        $((100 * BASH_REMATCH[1] / BASH_REMATCH[2])) "$what" \
        "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
    fi
  done
  return 0
}

setup() {
  apt_setup
  python_env
}

apt_setup() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "muir: installing ${missing[*]} (and what they need)" >&2
    local sudo="" log start=$SECONDS
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    log="$(mktemp)"
    # apt's status lines go to stdout (sudo passes no other descriptor),
    # mixed with dpkg's own lines, which only the log keeps.
    if ! { $sudo apt-get update -qq >"$log" 2>&1 &&
           $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
             --no-install-recommends -o APT::Status-Fd=1 "${missing[@]}" \
             2>&1 | tee -a "$log" | apt_progress |
             show_progress "$log.shown"; }; then
      grep -v -E '^(dl|pm)status:' "$log" >&2 || true
      rm -f "$log" "$log.shown"
      echo "muir: installing ${missing[*]} failed" >&2
      exit 1
    fi
    rm -f "$log" "$log.shown"
    echo "muir: installed ${#missing[@]} packages in $((SECONDS - start)) s" >&2
  fi
}

# A Python >= 3.12 to make the environment with, or nothing.
base_python() {
  local p
  for p in "${MUIR_PYTHON:-}" python3.12 python3.13 \
           "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3 \
           "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3; do
    [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 || continue
    "$p" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' \
      2>/dev/null && { command -v "$p"; return 0; }
  done
  return 1
}

# pip's lines as progress: each package found ("Collecting") moves the
# first half of the way, by the count of requirements; installing is the
# second half.
pip_progress() {
  local total="$1" n=0 line
  while IFS= read -r line; do
    case "$line" in
      Collecting\ *) n=$((n + 1)) line="${line#Collecting }"
        printf '%d\tmuir: installing Python packages: %d/%d %s\n' \
          $((n * 50 / total)) "$n" "$total" "${line%% (from *}" ;;
      Installing\ collected*)
        printf '60\tmuir: installing Python packages: unpacking %d\n' "$n" ;;
      Successfully\ installed*)
        printf '100\tmuir: installing Python packages: done\n' ;;
    esac
  done
  return 0
}

# The environment, made or brought up to python/requirements.txt: once per
# change of that file (its hash is kept in the environment).
python_env() {
  local stamp="$venv/muir-requirements.sha256" want log start=$SECONDS base
  local total
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] &&
    return 0
  if [ ! -x "$venv/bin/python" ]; then
    if ! base="$(base_python)"; then
      echo "muir: no Python >= 3.12 to make .venv with (emerging-optimizers" \
           "needs it; Debian 12's is 3.11): put python3.12 on PATH or name" \
           "one in MUIR_PYTHON" >&2
      exit 1
    fi
    echo "muir: making the Python environment .venv ($base)" >&2
    "$base" -m venv "$venv"
  fi
  total="$(grep -c '^[A-Za-z]' "$requirements")"
  echo "muir: installing $total pinned Python packages into .venv" \
       "(python/requirements.txt; torch alone is about 3 GB with its CUDA" \
       "libraries)" >&2
  log="$(mktemp)"
  if ! "$venv/bin/python" -m pip install --progress-bar off \
         --disable-pip-version-check -r "$requirements" 2>&1 |
       tee "$log" | pip_progress "$total" | show_progress "$log.shown"; then
    cat "$log" >&2
    rm -f "$log" "$log.shown"
    echo "muir: installing the Python packages failed" >&2
    exit 1
  fi
  rm -f "$log" "$log.shown"
  echo "$want" >"$stamp"
  echo "muir: installed the Python packages in $((SECONDS - start)) s" >&2
}

# configure DIR [CMAKE ARGS]: CMake + Ninja into DIR, once.
configure() {
  local dir="$1"
  shift
  # A folder configured with another Python (Debian's, before .venv) is
  # configured again with the environment's.
  if [ ! -f "$dir/build.ninja" ] ||
     { [ -f "$dir/CMakeCache.txt" ] &&
       ! grep -qxF "Python3_EXECUTABLE:FILEPATH=$venv/bin/python" \
         "$dir/CMakeCache.txt"; }; then
    echo "muir: configuring ${dir#"$root"/} (CMake)" >&2
    cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_LINK_MLIR_DYLIB=ON -DPython3_EXECUTABLE:FILEPATH="$venv/bin/python" \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit "$@" >"$dir.cmake.log" 2>&1 ||
      { cat "$dir.cmake.log" >&2; exit 1; }
  fi
}

# compile DIR [TARGETS]: ninja, showing its progress (show_progress) and
# the time it took; the whole log only if it fails.
compile() {
  local dir="$1" log start=$SECONDS name="${1#"$root"/}"
  shift
  log="$(mktemp)"
  if ! NINJA_STATUS="[%f/%t] " ninja -C "$dir" "$@" 2>&1 | tee "$log" |
       ninja_progress "$name" | show_progress "$log.shown"; then
    cat "$log" >&2
    rm -f "$log" "$log.shown"
    exit 1
  fi
  [ ! -e "$log.shown" ] ||
    echo "muir: built $name in $((SECONDS - start)) s" >&2
  rm -f "$log" "$log.shown"
}

# Every build is clang-22's: on the 2-core machine it builds muir in about
# half of g++ 12's time (the tools it builds run the tests as fast). g++
# stays installed for nvcc, which compiles the CUDA runtime's kernels with
# it. A folder configured before keeps its compiler (MUIR_BUILD_DIR with
# -DCMAKE_CXX_COMPILER=g++ in a fresh folder still builds with g++).
clang=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
build() {
  configure "$build" "${clang[@]}"
  compile "$build"
}

# The sanitizer builds: clang-22 with ASan + UBSan (CMake's MUIR_SANITIZE;
# MUIR_FUZZ adds libFuzzer's instrumentation and the targets in fuzz/).
build_sanitize() {
  configure "$sanitize_build" "${clang[@]}" -DMUIR_FUZZ=ON
  compile "$sanitize_build" muir-fuzzers muir-runtime-unittests
}
build_asan() {
  configure "$asan_build" "${clang[@]}" -DMUIR_SANITIZE=ON
  compile "$asan_build"
}

# Options of every run under the sanitizers (lit passes these variables on
# to its tests): a report stops the process with its stack, symbolized.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs when
# compiled with ASan (muir's code) but not in libMLIR.so, and both allocate
# from the same MLIRContext; libMLIR's allocations would read as poisoned.
sanitizer_env() {
  export ASAN_OPTIONS="allow_user_poisoning=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
}

# Limits of a fuzz target's run, also when it replays: an input that takes
# more than 10 s or 2 GB is a finding too.
fuzz_limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)

# Totals of the runs so far, for the closing line; status is non-zero once
# anything failed.
passed=0 failed=0 skipped=0 status=0

# run_tests DIR: the lit suite of the build in DIR.
run_tests() {
  local dir="$1" log rc=0 counts p f s
  log="$(mktemp)"
  /usr/lib/llvm-22/bin/lit -sv "$dir/test" 2>&1 | tee "$log" || rc=$?
  # Counts from lit's own summary.
  counts="$("$venv/bin/python" - "$log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def count(*names):
    return sum(int(m) for n in names
               for m in re.findall(r"^\s*%s\s*:\s*(\d+)" % n, text, re.M))
passed = count("Passed", "Expectedly Failed")
failed = count("Failed", "Unexpectedly Passed", "Unresolved", "Timed Out")
skipped = count("Unsupported", "Skipped", "Excluded")
print(passed, failed, skipped)
PY
)"
  rm -f "$log"
  read -r p f s <<<"$counts"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  [ "$rc" -eq 0 ] || status=1
}

# check NAME COMMAND...: one test of the sanitizer subset, reported as lit
# reports its own; the output is shown only when it fails.
check() {
  local name="$1" log
  shift
  log="$(mktemp)"
  if "$@" >"$log" 2>&1; then
    echo "PASS: sanitizer :: $name"
    passed=$((passed + 1))
  else
    tail -n 60 "$log"
    echo "FAIL: sanitizer :: $name"
    failed=$((failed + 1)) status=1
  fi
  rm -f "$log"
}

# The sanitizer subset of `test`: the runtime's unit tests, and every fuzz
# target over its seed corpus and its kept crash inputs (a libFuzzer binary
# given files runs each once, without fuzzing).
run_sanitize_subset() {
  sanitizer_env
  check muir-runtime-unittests "$sanitize_build/bin/muir-runtime-unittests"
  local f d inputs
  for f in "${fuzzers[@]}"; do
    inputs=()
    for d in "$root/fuzz/corpus/$f" "$root/fuzz/regressions/$f"; do
      [ -d "$d" ] &&
        mapfile -t -O ${#inputs[@]} inputs < <(find "$d" -type f | sort)
    done
    # Without files a fuzz target would start fuzzing.
    if [ ${#inputs[@]} -eq 0 ]; then
      check "$f (no inputs in fuzz/corpus/$f)" false
      continue
    fi
    check "$f (${#inputs[@]} inputs)" \
      "$sanitize_build/bin/$f" "${fuzz_limits[@]}" "${inputs[@]}"
  done
}

# run_fuzzers SECONDS: each fuzz target for SECONDS, one after the other.
# New inputs go to build-sanitize/fuzz/corpus/<target> (fuzz/corpus/ holds
# the seeds), crash inputs to build-sanitize/fuzz/artifacts/<target>/;
# keep each, minimised, in fuzz/regressions/<target>/ with its fix.
run_fuzzers() {
  local seconds="$1" f work log rc=0 seeds
  sanitizer_env
  work="$sanitize_build/fuzz"
  for f in "${fuzzers[@]}"; do
    mkdir -p "$work/corpus/$f" "$work/artifacts/$f"
    log="$work/$f.log"
    seeds=("$root/fuzz/corpus/$f")
    [ -d "$root/fuzz/regressions/$f" ] && seeds+=("$root/fuzz/regressions/$f")
    if "$sanitize_build/bin/$f" "${fuzz_limits[@]}" -max_total_time="$seconds" \
         -print_final_stats=1 -artifact_prefix="$work/artifacts/$f/" \
         "$work/corpus/$f" "${seeds[@]}" >"$log" 2>&1; then
      echo "muir fuzz: $f: $(sed -n 's/^stat::number_of_executed_units: *//p' \
        "$log") runs in ${seconds} s, nothing found"
    else
      tail -n 40 "$log"
      echo "muir fuzz: $f: FOUND a problem (log $log," \
           "input in $work/artifacts/$f/)"
      rc=1
    fi
  done
  return $rc
}

# The closing line CI reads; non-zero when anything failed.
closing() {
  echo "muir: $passed passed, $failed failed, $skipped skipped"
  [ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
}

case "$cmd" in
  run)   setup; build; exec "$build/bin/muir-run" "$@" ;;
  test)  setup; build; run_tests "$build"
         # A failed sanitizer build is one failed test: the closing line
         # still comes.
         if (build_sanitize); then
           run_sanitize_subset
         else
           echo "FAIL: sanitizer :: build ($sanitize_build)"
           failed=$((failed + 1)) status=1
         fi
         closing ;;
  bench) setup; build
         py="$venv/bin/python"
         "$py" "$root/bench/run.py" --build "$build" "$@"
         echo
         "$py" "$root/bench/compile_scale.py" --build "$build"
         echo
         "$py" "$root/bench/passes.py" --build "$build"
         echo
         "$py" "$root/bench/ns_sets.py" --build "$build"
         echo
         "$py" "$root/bench/moe.py" --build "$build"
         echo
         "$py" "$root/bench/determinism.py" --build "$build"
         echo
         "$py" "$root/bench/check_finite.py" --build "$build"
         echo
         exec "$py" "$root/bench/ns_modes.py" --build "$build" ;;
  build) setup; build ;;
  sanitize) setup; build_asan; sanitizer_env
            # OpenMPI leaves its state to the end of each rank's process
            # (in MCA components it has unloaded, out of reach of a
            # suppression): no leak checks in this run. The fuzz targets
            # and the runtime's unit tests (`test`) still check leaks.
            ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
              run_tests "$asan_build"
            closing ;;
  fuzz)  setup; build_sanitize; run_fuzzers "${1:-30}" ;;
  python) setup; build
          export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
          export MUIR_BUILD_DIR="$build"
          exec "$venv/bin/python" "$@" ;;
  env)   echo "export VIRTUAL_ENV=\"$venv\""
         echo "export PATH=\"$venv/bin:\$PATH\""
         echo "export PYTHONPATH=\"$root/python\${PYTHONPATH:+:\$PYTHONPATH}\""
         echo "export MUIR_BUILD_DIR=\"$build\"" ;;
  *) echo "usage: scripts/muir.sh run|test|bench|build|sanitize|fuzz|python|env [args]" >&2
     exit 2 ;;
esac
