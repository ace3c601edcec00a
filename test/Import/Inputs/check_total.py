"""Checks the parameter count in a muir-compile plan report.

Reads the report (JSON) from stdin and checks that "total_parameters" (an
element count) is within --tolerance (relative) of --expect, the model's
published size, and, with --exact, equal to the count the Hugging Face config
gives (the importer's formulas, computed independently). "muon_parameters"
and "adamw_parameters" must be there as non-negative integers too. Prints
"total N ok" on success; otherwise says why on stderr and exits 1.
"""
import argparse
import json
import sys


def fail(message):
    print("check_total: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", type=float, required=True)
    parser.add_argument("--tolerance", type=float, required=True)
    parser.add_argument("--exact", type=int)
    args = parser.parse_args()

    text = sys.stdin.read()
    try:
        report = json.loads(text)
    except ValueError as e:
        fail("the report is not JSON (%s); it starts %r" % (e, text[:200]))
    if not isinstance(report, dict):
        fail("the report is not a JSON object")
    for key in ("total_parameters", "muon_parameters", "adamw_parameters"):
        value = report.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            fail("%r is %r, not a non-negative integer" % (key, value))

    total = report["total_parameters"]
    if args.exact is not None and total != args.exact:
        fail("total_parameters %d, expected exactly %d (off by %+d)"
             % (total, args.exact, total - args.exact))
    deviation = (total - args.expect) / args.expect
    if abs(deviation) > args.tolerance:
        fail("total_parameters %d is %+.3f%% from %g (tolerance %g%%)"
             % (total, 100 * deviation, args.expect, 100 * args.tolerance))
    print("total %d ok" % total)


if __name__ == "__main__":
    main()
