"""muir-run's table is the same on any number of ranks.

One step of Distributed/table.test's description (a column-parallel and a
row-parallel matrix, a norm, an expert stack), from the same loaded
tensors, on one rank and on the layouts given (each "LAYOUT:RANKS"). For
every run and parameter the table must show the whole shape, |W| and |dW|
of the whole tensors (against NumPy's norms of that run's dump and of the
loaded tensors, to the 4 digits printed), and the singular values of the
Newton-Schulz output, within 2e-3 of the single rank's (split outputs are
gathered; the distributed modes round differently); the header the same
counts.

usage: rank_table.py --muir-run PATH --muir-compile PATH --tmp DIR
           --desc STEP.yaml --load DIR LAYOUT:RANKS...
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

import muirtest as mt

# One line per check, "FAIL ..." for a failure (muirtest's Checker).
chk = mt.Checker()


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("failed (%d): %s\n%s%s" % (out.returncode, " ".join(cmd),
                                            out.stdout, out.stderr))
    return out.stdout


ROW = re.compile(r"^  (\S+)\s+(\S+)\s+(?:sigma ([0-9.]+)\.\.([0-9.]+)\s+)?"
                 r"\|dW\| (\S+)\s+\|W\| (\S+)")


def table(text):
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = m.groups()[1:]
    header = re.search(r"^muir-run: .*?: (\d+ parameters \(\d+ with Muon\), "
                       r"\d+ tensors)", text, re.M).group(1)
    return header, rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--muir-run", required=True)
    p.add_argument("--muir-compile", required=True)
    p.add_argument("--tmp", required=True)
    p.add_argument("--desc", required=True)
    p.add_argument("--load", required=True)
    p.add_argument("layouts", nargs="+")
    args = p.parse_args()
    if os.path.exists(args.tmp):
        shutil.rmtree(args.tmp)
    os.makedirs(args.tmp)

    def step(desc, ranks, name):
        dump = os.path.join(args.tmp, name)
        text = run([args.muir_run, desc, "--steps", "1", "--load", args.load,
                    "--dump", dump, "--ranks", str(ranks)])
        return text, dump

    one_text, _ = step(args.desc, 1, "one")
    one_header, one = table(one_text)
    for spec in args.layouts:
        layout, ranks = spec.split(":")
        desc = os.path.join(args.tmp, layout.replace(",", "_") + ".yaml")
        run([args.muir_compile, args.desc, "--layout", layout,
             "--emit=description", "--quiet", "-o", desc])
        text, dump = step(desc, int(ranks), layout.replace(",", "_"))
        header, rows = table(text)
        chk.expect("%s: header '%s', %s ranks" % (layout, header, ranks),
                   header == one_header and ("%s ranks" % ranks) in text)
        for name, (shape, lo, hi, dw, w) in rows.items():
            after = np.load(os.path.join(dump, name + ".npy"))
            loaded = np.load(os.path.join(args.load, name + ".npy"))
            want_w = np.linalg.norm(after.astype(np.float64))
            want_dw = np.linalg.norm(after.astype(np.float64) - loaded)
            want_shape = "x".join(map(str, after.shape))
            ok = (shape == want_shape and
                  abs(float(w) - want_w) <= 5e-4 * want_w and
                  abs(float(dw) - want_dw) <= 5e-4 * want_dw)
            line = "%s: %s %s |W| %s |dW| %s (numpy %.4e %.4e)" % (
                layout, name, shape, w, dw, want_w, want_dw)
            single = one.get(name)
            if single and single[1]:
                ok = ok and lo is not None and \
                    abs(float(lo) - float(single[1])) <= 2e-3 and \
                    abs(float(hi) - float(single[2])) <= 2e-3
                line += " sigma %s..%s (one rank %s..%s)" % (
                    lo, hi, single[1], single[2])
            chk.expect(line, ok and name in one)
        chk.expect("%s: %d rows as on one rank" % (layout, len(rows)),
                   set(rows) == set(one),
                   "missing %s, extra %s" % (sorted(set(one) - set(rows)),
                                             sorted(set(rows) - set(one))))
    chk.finish()  # exits 1 after a failure
    return 0


if __name__ == "__main__":
    sys.exit(main())
