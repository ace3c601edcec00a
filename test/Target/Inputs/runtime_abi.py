"""The runtime calls compiled steps make against the runtimes' C headers.

A compiled step calls muirrt_* (CPU) and muirrt_cuda_* (CUDA) functions by
name, with argument types the compiler derives from each exec op
(muir-exec-to-runtime-calls). Nothing links the two: a call with an argument
too many, or an i32 where the header says int64_t, compiles and then
corrupts memory at run time - and the CUDA runtime runs only where a GPU is.

This script compiles steps that together use the runtime calls (MoE
training, layer-wise and FSDP sharing over dp, every Newton-Schulz mode and
form, the fused SYRK all-reduce, probes, fingerprint traces) for both
targets, collects the
declarations of the functions they call from the LLVM-dialect IR, has clang
compile a C file that includes muir-rt/Runtime.h and muir-rt/CudaRuntime.h
and takes each function's address, and compares the two signatures
function by function (LLVM types: i32, i64, f32, f64, ptr; the result).

Usage: runtime_abi.py --compiler muir-compile --opt muir-opt --clang clang
                      --include DIR --tmp DIR STEP.yaml...
Prints one line per target with the number of functions checked, or FAIL
lines naming each function and both signatures.
"""
import argparse
import os
import re
import subprocess
import sys

from muirtest import check_output as run  # test/lib

MLIR_FUNC = re.compile(r"llvm\.func @(muirrt_\w+)\(([^)]*)\)(?: -> (\S+))?")
C_DECL = re.compile(r"^declare (?:[\w()]+ )*?(\w+|ptr) @(muirrt_\w+)\((.*)\)",
                    re.M)


def mlir_type(t):
    t = t.strip()
    return {"!llvm.ptr": "ptr", "": "void"}.get(t, t)


def c_type(t):
    # clang's parameter: "i64 noundef", "i32 noundef signext", "ptr noundef".
    word = t.strip().split()[0] if t.strip() else ""
    return {"float": "f32", "double": "f64", "": "void"}.get(word, word)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--opt", required=True)
    ap.add_argument("--clang", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("steps", nargs="+")
    o = ap.parse_args()
    os.makedirs(o.tmp, exist_ok=True)

    # (target, flags): every mode, form and sharing path, on both targets.
    variants = [[], ["--ns-mode=distributed"], ["--ns-mode=resharded"],
                ["--ns-mode=blockwise"], ["--ns-form=gram"],
                ["--syrk=false"], ["--fuse-syrk-all-reduce=false"],
                ["--dp-assign=replicated"], ["--probe-updates"],
                ["--ns-precision=bf16"]]
    compiled = {"cpu": {}, "cuda": {}}

    def collect(target, path):
        with open(path) as f:
            for name, args, result in MLIR_FUNC.findall(f.read()):
                sig = ([mlir_type(a) for a in args.split(",")]
                       if args.strip() else [], mlir_type(result or ""))
                old = compiled[target].setdefault(name, sig)
                if old != sig:
                    print("FAIL %s: the compiler declares it two ways: %s "
                          "and %s" % (name, old, sig))
                    sys.exit(1)

    # The fingerprint traces' call (muir-run --trace, CPU only).
    for k, step in enumerate(o.steps):
        exec_ir = os.path.join(o.tmp, "trace-%d.exec.mlir" % k)
        out = os.path.join(o.tmp, "trace-%d.mlir" % k)
        run([o.compiler, step, "--emit=exec", "--quiet", "-o", exec_ir])
        run([o.opt, exec_ir, "--muir-trace-buffers", "--muir-exec-to-llvm",
             "-o", out])
        collect("cpu", out)
    for target in compiled:
        for k, step in enumerate(o.steps):
            for j, flags in enumerate(variants):
                out = os.path.join(o.tmp, "%s-%d-%d.mlir" % (target, k, j))
                r = subprocess.run([o.compiler, step, "--target=" + target,
                                    "--emit=llvm", "--quiet", "-o", out]
                                   + flags, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE,
                                   universal_newlines=True)
                if r.returncode != 0:
                    # A mode a step's matrices cannot take is refused
                    # (e.g. resharded where the group divides neither
                    # dimension): that variant has nothing to check.
                    continue
                collect(target, out)

    names = sorted(set(compiled["cpu"]) | set(compiled["cuda"]))
    src = os.path.join(o.tmp, "abi.c")
    with open(src, "w") as f:
        f.write('#include "muir-rt/Runtime.h"\n'
                '#include "muir-rt/CudaRuntime.h"\n'
                "void *const muir_abi_used[] = {\n")
        for n in names:
            f.write("  (void *)&%s,\n" % n)
        f.write("};\n")
    ir = run([o.clang, "-std=c11", "-S", "-emit-llvm", "-O0", "-I", o.include,
              "-o", "-", src])
    header = {}
    for result, name, args in C_DECL.findall(ir):
        header[name] = ([c_type(a) for a in args.split(",")]
                        if args.strip() else [], c_type(result))

    ok = True
    for target in ("cpu", "cuda"):
        target_ok = True
        for name, (args, result) in sorted(compiled[target].items()):
            want = header.get(name)
            if want is None:
                ok = target_ok = False
                print("FAIL %s: called by compiled %s steps, not declared in "
                      "the headers" % (name, target))
            elif want != (args, result):
                ok = target_ok = False
                print("FAIL %s: compiled steps call (%s) -> %s, the header "
                      "declares (%s) -> %s" % (name, ", ".join(args), result,
                                               ", ".join(want[0]), want[1]))
        print("%s: %d runtime functions, each called as its header declares "
              "it%s" % (target, len(compiled[target]),
                        "" if target_ok else " FAIL"))
    sys.exit(0 if ok else 1)


main()
