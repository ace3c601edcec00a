#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/) from the
examples and the tests: descriptions and Hugging Face configs as they are,
the muir dialects' round-trip and verifier tests cut into small modules
(comments dropped), and .npy files written by NumPy (valid ones and the
kinds the reader must refuse). Run it again when the tests change; it
replaces the corpora, not fuzz/regressions/.

  .venv/bin/python fuzz/seed_corpus.py
"""
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
SPLIT_FILE = "/usr/lib/llvm-22/bin/split-file"


def write(target, name, data):
    path = os.path.join(CORPUS, target, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def split_parts(test):
    """The parts of a split-file test, as {name: bytes}."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([SPLIT_FILE, os.path.join(ROOT, test), tmp], check=True)
        return {n: open(os.path.join(tmp, n), "rb").read()
                for n in sorted(os.listdir(tmp))}


def descriptions():
    write("description_fuzzer", "tiny-moe.yaml", read("examples/tiny-moe.yaml"))
    picks = {
        "test/Import/import-ir.test": ["desc.yaml", "desc.json"],
        "test/Import/layout.test": ["desc.yaml", "odd.yaml"],
        "test/Import/report.test": ["desc.yaml"],
        "test/Import/ns-mode.test": ["step.yaml", "bad.yaml"],
        "test/Import/errors.test": ["bad.yaml", "bad.json", "grid.yaml",
                                    "train.yaml", "overflow.yaml",
                                    "devices.yaml", "quote.yaml"],
        "test/Target/cuda-compile.test": ["moe.yaml", "fsdp.yaml"],
    }
    for test, names in picks.items():
        parts = split_parts(test)
        stem = os.path.splitext(os.path.basename(test))[0]
        for n in names:
            write("description_fuzzer", "%s-%s" % (stem, n), parts[n])


def hf_configs():
    for d in ["examples/hf", "test/Import/Inputs"]:
        for n in sorted(os.listdir(os.path.join(ROOT, d))):
            if n.endswith(".json"):
                write("hf_config_fuzzer", n, read(os.path.join(d, n)))


def npy_bytes(array, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, array)
    else:
        np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def npy_files():
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    write("npy_fuzzer", "f4-2x3.npy", npy_bytes(a))
    write("npy_fuzzer", "f4-scalar.npy", npy_bytes(np.float32(1.5)))
    write("npy_fuzzer", "f4-4.npy", npy_bytes(np.ones(4, "<f4")))
    write("npy_fuzzer", "f4-1x2x2.npy",
          npy_bytes(np.zeros((1, 2, 2), "<f4")))
    write("npy_fuzzer", "f4-0.npy", npy_bytes(np.zeros((0,), "<f4")))
    write("npy_fuzzer", "f4-v2.npy", npy_bytes(a, version=(2, 0)))
    write("npy_fuzzer", "f8.npy", npy_bytes(a.astype("<f8")))
    write("npy_fuzzer", "f4-big-endian.npy", npy_bytes(a.astype(">f4")))
    write("npy_fuzzer", "f4-fortran.npy", npy_bytes(np.asfortranarray(a)))
    write("npy_fuzzer", "f4-truncated.npy", npy_bytes(a)[:-5])


def mlir_chunks(text, per_file):
    """Top-level ops of a round-trip test (comments dropped), grouped
    `per_file` functions at a time after the file's symbols (muir.grid)."""
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("//")]
    ops, current = [], []
    for line in lines:
        if not line.strip():
            continue
        current.append(line)
        # A top-level op ends at a line without indentation that closes it
        # (a function's '}') or is a one-line op.
        if not line.startswith(" ") and (line == "}" or
                                         not line.rstrip().endswith("{")):
            ops.append("\n".join(current) + "\n")
            current = []
    symbols = [o for o in ops if not o.startswith("func.func")]
    funcs = [o for o in ops if o.startswith("func.func")]
    for i in range(0, len(funcs), per_file):
        yield "".join(symbols + funcs[i:i + per_file])


def mlir_cases(text, step):
    """Every `step`-th case of a verifier test (split at '// -----')."""
    cases = re.split(r"^// -----\s*$", text, flags=re.M)
    for case in cases[::step]:
        body = [l for l in case.splitlines()
                if not l.lstrip().startswith("//") and l.strip()]
        if body:
            yield "\n".join(body) + "\n"


def dialects():
    for dialect, per_file, step in [("Muir", 6, 12), ("MuirExec", 4, 6)]:
        d = "test/Dialect/%s/" % dialect
        for i, chunk in enumerate(
                mlir_chunks(read(d + "ops.mlir").decode(), per_file)):
            write("dialect_fuzzer", "%s-ops-%d.mlir" % (dialect, i), chunk)
        for i, case in enumerate(
                mlir_cases(read(d + "invalid.mlir").decode(), step)):
            write("dialect_fuzzer", "%s-invalid-%d.mlir" % (dialect, i), case)


def manifests():
    # The manifest muir-run --save-state writes (lib/Runner/State.cpp), and
    # two it must refuse.
    manifest = """{
  "format": "muir-state-3",
  "step": 3,
  "identity": {
    "step_hash": "5f0d1c2b3a4e6f70",
    "layout_free_hash": "0a1b2c3d4e5f6071",
    "grid": "dp=2,tp=2; moe: edp=2,ep=2",
    "flags": {"--ns-mode": "auto", "--seed": "0"},
    "build": "muir 0.1"
  },
  "tensors": {
    "w": "0123456789abcdef",
    "layers/0/w.momentum": "fedcba9876543210"
  }
}
"""
    write("state_manifest_fuzzer", "manifest.json", manifest)
    write("state_manifest_fuzzer", "step-too-large.json",
          manifest.replace('"step": 3', '"step": 9007199254740992'))
    write("state_manifest_fuzzer", "tensor-escapes.json",
          manifest.replace('"w":', '"../w":'))


def deep_nesting():
    """Inputs nested far past the readers' bound (256 levels), which a
    recursive parser would overflow its stack on: each reader refuses them
    before parsing."""
    n = 5000
    grid = "grid: {axes: {dp: 1}}\n"
    write("description_fuzzer", "deep-flow.yaml",
          grid + "parameters: " + "[" * n + "]" * n + "\n")
    write("description_fuzzer", "deep-compact.yaml",
          grid + "parameters:\n" + "- " * n + "x\n")
    write("hf_config_fuzzer", "deep.json",
          '{"model_type": "qwen3_moe", "x": ' + "[" * n + "]" * n + "}")
    write("state_manifest_fuzzer", "deep.json",
          '{"format": ' + "{\"a\": " * n + "1" + "}" * n + "}")
    write("dialect_fuzzer", "deep-regions.mlir",
          "func.func @f() {\n" + "scf.execute_region {\n" * n + "}\n" * n +
          "return\n}\n")
    write("dialect_fuzzer", "deep-tuple.mlir",
          "func.func private @f(%a: " + "tuple<" * n + "i32" + ">" * n + ")\n")
    # A shape whose byte count overflows 64 bits (2^61 elements of 8 bytes).
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, 8), }" \
        % (1 << 58)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    write("npy_fuzzer", "shape-overflow.npy",
          b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
          header.encode() + b"\0" * 8)


def main():
    targets = {"description_fuzzer": descriptions,
               "hf_config_fuzzer": hf_configs,
               "npy_fuzzer": npy_files,
               "dialect_fuzzer": dialects,
               "state_manifest_fuzzer": manifests}
    for target, fill in targets.items():
        shutil.rmtree(os.path.join(CORPUS, target), ignore_errors=True)
        os.makedirs(os.path.join(CORPUS, target))
        fill()
    deep_nesting()
    for target in targets:
        print("%s: %d files" % (target,
                                len(os.listdir(os.path.join(CORPUS, target)))))


if __name__ == "__main__":
    sys.exit(main())
