"""The plan report's decisions against the planned IR's, per matrix.

muir-distribute records its decisions on each muir.apply_update (the typed
`muir.ns_mode`, `muir.ns_form`, `muir.ns_why`, `muir.modelled_ms`,
`muir.dp_owner`), and `--report` reads them back from the planned IR
(analyzeDecisions, lib/Analysis/StepCost.cpp). This script checks that
reading against the IR's text for one description and options, parameter
by parameter, naming the first that differs:

  - the split Muon matrices: the same set, the same Newton-Schulz mode;
  - the model's time of the chosen mode and form: the report's modelled_ms
    equals the candidate of that mode and form listed in the IR's ns_why
    (printed there to 3 significant digits), when the model chose;
  - the report's modelled_ms is the IR's muir.modelled_ms (every mode);
  - the dp owners: the same set of parameters, the same owner, and each dp
    rank's load the sum of its matrices' muir.dp_weight;
  - the Newton-Schulz forms: muir-gram-newton-schulz's records (the typed
    `muir.ns_form` and `muir.ns_form_cost` on the op each Newton-Schulz
    left: its form, both modelled times, the shape and batch of X) are the
    report's `ns_forms` (each record's times over its batch, per matrix),
    no matrix listed twice.

Usage: report_vs_ir.py --compiler C --tmp DIR LABEL -- <muir-compile args>
Prints "<label>: <n> split matrices, <k> owners agree" or FAIL lines.
"""
import argparse
import json
import os
import re
import struct
import sys

from muirtest import check_output  # test/lib

ARG = re.compile(r"(%arg\d+): tensor<[^>]*> \{([^}]*)\}")
NAME = re.compile(r'muir\.name = "([^"]+)"')
DEF = re.compile(r"^\s*(%[\w.#]+)(?::\d+)? = [\w.]+ (%[\w.#]+)")
APPLY = re.compile(r"muir\.apply_update (%[\w.#]+),")
MODE = re.compile(r"muir\.ns_mode = #muir\.ns_mode<(\w+)>")
FORM = re.compile(r"muir\.ns_form = #muir\.ns_form<(\w+)>")
OWNER = re.compile(r"muir\.dp_owner = (\d+)")
# An f64 attribute prints as a decimal, or as its bits (0x...) where no
# short decimal reads back the same.
F64 = r"(0x[0-9A-Fa-f]+|[0-9.eE+-]+) : f64"
MODELLED = re.compile(r"muir\.modelled_ms = " + F64)
WEIGHT = re.compile(r"muir\.dp_weight = " + F64)


def f64(text):
    if text.startswith("0x"):
        return struct.unpack(">d", bytes.fromhex(text[2:].zfill(16)))[0]
    return float(text)
CAND = re.compile(r"<(\w+), (\w+), ([0-9.e+-]+) ms")
FORM_COST = re.compile(
    r"muir\.ns_form = #muir\.ns_form<(\w+)>, muir\.ns_form_cost = "
    r"#muir\.ns_form_cost<standard = ([0-9.e+-]+) s, gram = ([0-9.e+-]+) s>")
TENSOR = re.compile(r"tensor<([0-9x]+)x(?:f32|f64|bf16)>")


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def decisions(ir):
    """name -> (mode, form, owner, candidates) from the planned IR."""
    names, source = {}, {}
    for line in ir.splitlines():
        if "func.func" in line:
            for arg, attrs in ARG.findall(line):
                m = NAME.search(attrs)
                if m:
                    names[arg] = m.group(1)
            continue
        d = DEF.match(line)
        if d:
            source[d.group(1)] = d.group(2)
    out = {}
    for line in ir.splitlines():
        a = APPLY.search(line)
        if not a:
            continue
        v = a.group(1)
        for _ in range(100):  # views of the parameter back to its argument
            if v in names or v not in source:
                break
            v = source[v]
        if v not in names:
            fail("apply_update of %s: no parameter argument" % a.group(1))
        mode, form, owner = MODE.search(line), FORM.search(line), \
            OWNER.search(line)
        why = line[line.find("muir.ns_why"):] if "muir.ns_why" in line else ""
        cands = [(c[0], c[1], float(c[2])) for c in CAND.findall(why)]
        modelled, weight = MODELLED.search(line), WEIGHT.search(line)
        got = (mode and mode.group(1), form and form.group(1),
               owner and int(owner.group(1)), tuple(cands),
               modelled and f64(modelled.group(1)),
               weight and f64(weight.group(1)))
        name = names[v]
        if name in out and out[name] != got:
            fail("%s: its updates record different decisions" % name)
        out[name] = got
    return out


def form_records(ir):
    """{(form, rows, cols, batch): (standard_ms, gram_ms) per matrix} of
    the IR's form records (X's shape: the op's result, its last type)."""
    out = {}
    for line in ir.splitlines():
        m = FORM_COST.search(line)
        if not m:
            continue
        dims = [int(x) for x in TENSOR.findall(line)[-1].split("x")]
        batch = dims[0] if len(dims) == 3 else 1
        out.setdefault((m.group(1), dims[-2], dims[-1], batch), set()).add(
            (float(m.group(2)) * 1e3 / batch, float(m.group(3)) * 1e3 / batch))
    return out


def check_forms(label, ir, report):
    records = form_records(ir)
    seen = set()
    for f in report["ns_forms"]:
        key = (f["form"], f["rows"], f["cols"], f["batch"])
        if (f["name"], f["rows"], f["cols"]) in seen:
            fail("%s: %s %dx%d listed twice in ns_forms" %
                 (label, f["name"], f["rows"], f["cols"]))
        seen.add((f["name"], f["rows"], f["cols"]))
        # The IR prints 6 significant digits.
        if not any(abs(f["standard_ms"] - s) <= 1e-5 * s and
                   abs(f["gram_ms"] - g) <= 1e-5 * g
                   for s, g in records.get(key, ())):
            fail("%s: %s: report %s %dx%d batch %d (%.6g / %.6g ms), no "
                 "such record in the IR" % (label, f["name"], *key,
                                            f["standard_ms"], f["gram_ms"]))
    listed = {(f["form"], f["rows"], f["cols"], f["batch"])
              for f in report["ns_forms"]}
    if listed != set(records):
        fail("%s: IR records without a report entry: %s" %
             (label, sorted(set(records) - listed)[:3]))
    return len(report["ns_forms"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("label")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    o = ap.parse_args()
    args = o.args[1:] if o.args and o.args[0] == "--" else o.args
    os.makedirs(o.tmp, exist_ok=True)
    ir_path = os.path.join(o.tmp, o.label + ".planned.mlir")
    rep_path = os.path.join(o.tmp, o.label + ".json")
    check_output([o.compiler] + args + ["--emit=planned", "-o", ir_path,
                                        "--report=" + rep_path, "--quiet"])
    with open(ir_path) as f:
        text = f.read()
    ir = decisions(text)
    with open(rep_path) as f:
        report = json.load(f)

    split_ir = {n: d for n, d in ir.items() if d[0]}
    split_report = {m["name"]: m for m in report["matrices"]}
    if set(split_ir) != set(split_report):
        fail("%s: split matrices differ: only in the IR %s, only in the "
             "report %s" % (o.label, sorted(set(split_ir) - set(split_report))[:3],
                            sorted(set(split_report) - set(split_ir))[:3]))
    timed = 0
    for name, m in split_report.items():
        mode, form, owner, cands, modelled, _ = split_ir[name]
        if m["ns_mode"] != mode:
            fail("%s: %s: report %s, IR %s" % (o.label, name, m["ns_mode"],
                                               mode))
        if cands:
            chosen = [c for c in cands if c[0] == mode and
                      c[1] == (form or "standard")]
            if len(chosen) != 1:
                fail("%s: %s: the IR lists no candidate %s/%s" %
                     (o.label, name, mode, form))
            ms = chosen[0][2]
            if abs(m["modelled_ms"] - ms) > 5e-3 * ms:
                fail("%s: %s: report %.4g ms, IR %s/%s %.3g ms" %
                     (o.label, name, m["modelled_ms"], mode, form, ms))
            timed += 1
        if modelled is None or \
                abs(m["modelled_ms"] - modelled) > 1e-9 * max(modelled, 1e-9):
            fail("%s: %s: report %r ms, IR muir.modelled_ms %r" %
                 (o.label, name, m["modelled_ms"], modelled))
    owners_ir = {n: d[2] for n, d in ir.items() if d[2] is not None}
    owners_report = report["dp_assignment"].get("owners", {})
    if owners_ir != owners_report:
        diff = sorted(n for n in set(owners_ir) | set(owners_report)
                      if owners_ir.get(n) != owners_report.get(n))
        fail("%s: dp owners differ on %d parameters, first %s: IR %s, "
             "report %s" % (o.label, len(diff), diff[0],
                            owners_ir.get(diff[0]),
                            owners_report.get(diff[0])))
    # Each dp rank's load: the weights of the matrices it owns.
    load = [0.0] * max(1, report["dp_assignment"]["ranks"])
    for n, d in ir.items():
        if d[2] is not None:
            load[d[2]] += d[5] or 0.0
    for r, (got, want) in enumerate(zip(report["dp_assignment"]["load"],
                                        load)):
        if abs(got - want) > 1e-9 * max(want, 1.0):
            fail("%s: dp rank %d: report load %r, IR weights %r" %
                 (o.label, r, got, want))
    forms = check_forms(o.label, text, report)
    print("%s: %d split matrices (%d timed by the model), %d owners, %d "
          "forms agree" % (o.label, len(split_report), timed, len(owners_ir),
                           forms))


main()
