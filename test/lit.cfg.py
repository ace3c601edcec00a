# -*- Python -*-
# lit configuration for muir's regression tests.
import os

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
config.substitutions.append(("%muir_lib_dir",
                             os.path.join(config.muir_obj_root, "lib")))
config.substitutions.append(("%testlib", os.path.join(config.test_source_root, "lib")))

llvm_config.with_system_environment(["HOME", "TMPDIR", "OPENBLAS_NUM_THREADS",
                                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"])
llvm_config.use_default_substitutions()

tool_dirs = [config.muir_tools_dir, config.llvm_tools_dir]
tools = ["muir-opt", "muir-run", "muir-compile", "muir-sgemm-rate",
         "muir-trace-diff",
         ToolSubst("muir-runtime-unittests", unresolved="ignore"),
         ToolSubst("muir-dist-unittests", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PYTHONPATH",
                             os.path.join(config.test_source_root, "lib"),
                             append_path=True)

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
if shutil.which("mpirun") and os.path.exists(
        os.path.join(config.muir_tools_dir, "muir-dist-unittests")):
    config.available_features.add("mpi")
if os.path.exists(os.path.join(config.muir_tools_dir, "muir-runtime-unittests")):
    config.available_features.add("gtest")
