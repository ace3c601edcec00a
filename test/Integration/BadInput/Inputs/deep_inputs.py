"""Writes inputs nested far past the readers' bound (kMaxNestingDepth, 256)
into the folder given: each would overflow a recursive parser's stack.
Also one nested exactly to the bound, which is read."""
import os
import sys

out = sys.argv[1]
n = 50000


def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)


grid = "grid: {axes: {dp: 1}}\n"
write("flow.yaml", grid + "parameters: " + "[" * n + "]" * n + "\n")
write("flow-map.yaml", grid + "parameters: " + "{a: " * n + "1" + "}" * n + "\n")
write("compact.yaml", grid + "parameters:\n" + "- " * n + "x\n")
write("indented.yaml", grid + "parameters:\n" +
      "".join(" " * i + "- \n" for i in range(1, 400)))
write("desc.json", '{"grid": {"axes": {"dp": 1}}, "parameters": ' +
      "[" * n + "]" * n + "}\n")
write("config.json", '{"model_type": "qwen3_moe", "x": ' +
      "[" * 200000 + "]" * 200000 + "}\n")
write("manifest.json", '{"format": ' + "[" * 200000 + "]" * 200000 + "}\n")
write("regions.mlir", "func.func @f() {\n" + "scf.execute_region {\n" * 20000 +
      "}\n" * 20000 + "return\n}\n")
write("tuple.mlir", "func.func private @f(%a: " + "tuple<" * 100000 + "i32" +
      ">" * 100000 + ")\n")
# Within the bound: the module's own braces and 250 tuples.
write("tuple-250.mlir", "func.func private @f(%a: " + "tuple<" * 250 + "i32" +
      ">" * 250 + ")\n")
