# -*- Python -*-
# lit configuration for muir's regression tests.
import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "muir"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "Inputs", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.muir_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%muir_obj_root", config.muir_obj_root))
config.substitutions.append(("%muir_lib_dir",
                             os.path.join(config.muir_obj_root, "lib")))
# MLIR's headers (the C API's, for C programs the tests compile).
config.substitutions.append(("%mlir_include", os.path.join(
    os.path.dirname(config.llvm_tools_dir), "include")))
config.substitutions.append(("%testlib", os.path.join(config.test_source_root, "lib")))
# Runs a tool without root's power to read any file: as root, as the user
# nobody with no groups (setpriv, util-linux); otherwise as the user.
if os.geteuid() == 0:
    # Tests that hand files to another user (chown) need root.
    config.available_features.add("root")
    config.substitutions.append(
        ("%unprivileged",
         "setpriv --reuid=65534 --regid=65534 --clear-groups"))
else:
    config.substitutions.append(("%unprivileged", ""))

llvm_config.with_system_environment(["HOME", "TMPDIR", "OPENBLAS_NUM_THREADS",
                                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"])
llvm_config.use_default_substitutions()

tool_dirs = [config.muir_tools_dir, config.llvm_tools_dir]
tools = ["muir-opt", "muir-run", "muir-compile", "muir-sgemm-rate",
         "muir-trace-diff", "muir-step-runner", "muir-lsp-server",
         "muir-reduce", "muir-capi-test",
         ToolSubst("muir-runtime-unittests", unresolved="ignore"),
         ToolSubst("muir-analysis-unittests", unresolved="ignore"),
         ToolSubst("muir-runner-unittests", unresolved="ignore"),
         ToolSubst("muir-dist-unittests", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PYTHONPATH",
                             os.path.join(config.test_source_root, "lib"),
                             append_path=True)
# The Python package (python/muir) over the step library of this build.
llvm_config.with_environment("PYTHONPATH",
                             os.path.join(os.path.dirname(
                                 config.test_source_root), "python"),
                             append_path=True)
llvm_config.with_environment("MUIR_BUILD_DIR", config.muir_obj_root)

# Python test helpers (numpy references) are not tests themselves.
config.excludes.append("__pycache__")

if config.muir_have_cuda:
    config.available_features.add("cuda-toolkit")
if os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl"):
    config.available_features.add("cuda-gpu")
else:
    lit_config.note("GPU execution tests (REQUIRES: cuda-gpu) are skipped: "
                    "no NVIDIA device (/dev/nvidia0) on this machine")
import shutil
missing = {}
if not config.muir_have_mpi:
    missing["mpi"] = "the runtime was built without MPI (libopenmpi-dev)"
elif not shutil.which("mpirun"):
    missing["mpi"] = "no mpirun on PATH (openmpi-bin)"
elif not os.path.exists(os.path.join(config.muir_tools_dir,
                                     "muir-dist-unittests")):
    missing["mpi"] = "muir-dist-unittests was not built"
else:
    config.available_features.add("mpi")
if not os.path.exists(os.path.join(config.muir_tools_dir,
                                   "muir-runtime-unittests")):
    missing["gtest"] = "muir-runtime-unittests was not built (libgtest-dev)"
else:
    config.available_features.add("gtest")
# The runtime ABI test compiles the C headers with the LLVM tools' clang
# (clang-22).
if os.path.exists(os.path.join(config.llvm_tools_dir, "clang")):
    config.available_features.add("clang")
else:
    missing["clang"] = "no clang in %s (clang-22)" % config.llvm_tools_dir
# muir.torch's tests need PyTorch 2.x and NumPy in the tests' Python (the
# environment scripts/muir.sh makes, .venv), the peers' tests the peers
# (transformers' MoE blocks, emerging-optimizers' Newton-Schulz). Found,
# not imported: importing torch takes seconds, which every lit run (one
# test or all) would pay; a package that is installed but fails to import
# fails its tests instead of skipping them.
import subprocess
python_features = {"torch": ("torch", "numpy"),
                   "transformers": ("transformers",),
                   "emerging-optimizers": ("emerging_optimizers",)}
try:
    found = subprocess.run(
        [config.python_executable, "-c",
         "import importlib.util, sys\n"
         "for f, ms in %r.items():\n"
         "    if all(importlib.util.find_spec(m) for m in ms): print(f)\n"
         % python_features],
        check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        timeout=120, text=True).stdout.split()
except Exception:
    found = []
for feature, modules in python_features.items():
    if feature in found:
        config.available_features.add(feature)
    else:
        missing[feature] = ("%s cannot import %s (scripts/muir.sh installs "
                            "python/requirements.txt into .venv)"
                            % (config.python_executable, ", ".join(modules)))
# A machine set up by scripts/muir.sh has every feature but the GPU: there
# (and in CI) a missing one is an error, not a quietly skipped test.
required = os.environ.get("MUIR_REQUIRE_FEATURES")
if required is None and os.environ.get("CI", "").lower() in ("1", "true"):
    required = ("mpi,gtest,torch,transformers,emerging-optimizers,"
                "clang")
for feature in filter(None, (required or "").split(",")):
    if feature not in config.available_features:
        lit_config.fatal("the required test feature '%s' is missing: %s" %
                         (feature, missing.get(feature, "not available on "
                                               "this machine")))
# lit itself, for the test of the above.
config.substitutions.append(("%lit", sys.argv[0]))
config.substitutions.append(("%muir_test_root", config.test_exec_root))
