#!/usr/bin/env python3
"""Runs the commands quoted in README.md and docs/*.md and compares their
output with the quote, so that a change of a tool's output fails the suite
until the docs follow it.

Marking a block (an HTML comment on the line before a fenced block; it does
not show in the rendered Markdown):

  <!-- check -->            the block is a terminal session: every line that
                            starts with "$ " is a command (a line ending in
                            "\\" continues it), and the lines up to the next
                            command or the end of the block are its output
                            (stdout and stderr together, as a terminal shows
                            them; the exit status is not compared).
  <!-- check: needs MOD --> the same, run only where the project's Python
                            (.venv/bin/python) can
                            import the Python modules MOD (e.g. torch: the
                            lit feature of that name), else SKIP.
  <!-- check: file NAME --> the block's text is the file NAME, written into
                            the folder where every checked command runs
                            (mini.yaml in description.md, dp.yaml in
                            muir-compile.md).
  <!-- not checked: WHY --> a session that is deliberately not run (GPU
                            only, minutes long). A fenced block with "$ "
                            lines and neither marker is an error, so no new
                            quote goes unchecked by oversight.

Each checked block runs in a fresh folder that holds a link to every
top-level entry of the repository (build/ is the build under test, and
build/bin/ is first on PATH), the files of the `file` blocks and those of
test/Docs/Inputs/files/ (inputs a doc names but does not show in full, as
bad.yaml): a command reads as from the repository root, and what it writes
lands in that folder. Commands of one block run in order in the same
folder.

Comparison, line by line, exact except for:
  * trailing whitespace of a line, and blank lines at the end of an output;
  * a quoted line "..." or "... (any words) ..." stands for any number of
    output lines, none included;
  * wall-clock times, which no two runs share; each of TIMES below names
    the one place in one tool's output where a time is printed, and that
    number becomes {t} on both sides. Every other number (singular values,
    norms, losses, bytes, flops, modelled costs) is compared as printed.

  check_docs.py --root REPO --build BUILD --tmp DIR [--only FILE[:LINE]]
                [--update]

--update rewrites, in the docs, the quoted output of every command whose
quote has no "..." line with what the command printed now (the docs follow
the tools); the others are left for a hand edit and still fail.
"""
import argparse
import difflib
import errno
import glob
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

DOCS = ["README.md", "docs/*.md"]
MARK = re.compile(r"^<!--\s*(check(?::\s*(.*?))?|not checked:\s*(.*?))\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")

# (name, regex): the groups of each regex are wall-clock times.
TIMES = [
    # muir-run: "step 3: 97.93 ms" heads each step's table
    ("muir-run step", re.compile(r"^step \d+: (\d+\.\d+) ms$")),
    # muir-run's closing line
    ("muir-run summary", re.compile(
        r"^muir-run: steps \d+ mean_ms (\d+\.\d+) min_ms (\d+\.\d+) "
        r"check_ms (\d+\.\d+)$")),
    # muir-compile --timing: "muir-compile: lowered at 1.410237e-02 s"
    ("muir-compile --timing", re.compile(
        r"^muir-compile: [A-Za-z -]+ at (\d\.\d+e[-+]\d+) s$")),
    # examples/torch/train_moe.py: the two step-time columns of its table
    ("train_moe.py table", re.compile(
        r"^ +\d+ +\S+ +\S+ +\S+( +\d+\.\d+)( +\d+\.\d+)$")),
    # ... and its closing lines
    ("train_moe.py summary", re.compile(
        r"^(?:muir |torch) loss .* optimizer step (\d+\.\d+) ms "
        r"\(mean after the first; first (\d+\.\d+) ms\)$")),
]


def normalise(line):
    line = line.rstrip()
    for _, rx in TIMES:
        m = rx.match(line)
        if m:
            out, last = [], 0
            for g in range(1, (rx.groups or 0) + 1):
                out.append(line[last:m.start(g)])
                # a padded column keeps its padding's meaning: {t} alone
                out.append(" {t}" if m.group(g).startswith(" ") else "{t}")
                last = m.end(g)
            out.append(line[last:])
            return "".join(out)
    return line


def is_skip(line):
    s = line.strip()
    return s == "..." or (s.startswith("... ") and s.endswith(" ..."))


class Block:
    def __init__(self, path, line, kind, arg, lines):
        self.path, self.line, self.kind, self.arg = path, line, kind, arg
        self.lines = lines            # the block's text, one entry per line
        self.first = line + 1         # doc line of lines[0]


def read_blocks(root, errors):
    blocks = []
    for pattern in DOCS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                text = f.read().split("\n")
            i, mark = 0, None
            while i < len(text):
                m = MARK.match(text[i])
                if m:
                    mark = (i + 1, m)
                    i += 1
                    continue
                f = FENCE.match(text[i])
                if not f:
                    if text[i].strip():
                        mark = None
                    i += 1
                    continue
                indent, fence = f.group(1), f.group(2)
                start = i
                body = []
                i += 1
                while i < len(text) and not (
                        text[i].strip().startswith(fence[0] * len(fence))
                        and text[i].strip().strip(fence[0]) == ""):
                    body.append(text[i][len(indent):]
                                if text[i].startswith(indent) else text[i])
                    i += 1
                i += 1
                has_cmd = any(l.startswith("$ ") for l in body)
                if mark is None:
                    if has_cmd:
                        errors.append("%s:%d: a quoted session without "
                                      "<!-- check --> or <!-- not checked: "
                                      "WHY -->" % (rel, start + 1))
                    continue
                mline, m = mark
                mark = None
                if m.group(3) is not None:
                    continue
                arg = (m.group(2) or "").strip()
                if arg.startswith("file "):
                    blocks.append(Block(rel, start + 1, "file",
                                        arg[5:].strip(), body))
                elif arg == "" or arg.startswith("needs "):
                    if not has_cmd:
                        errors.append("%s:%d: <!-- check --> before a block "
                                      "with no '$ ' command" % (rel, mline))
                        continue
                    blocks.append(Block(rel, start + 1, "run",
                                        arg[6:].split() if arg else [], body))
                else:
                    errors.append("%s:%d: unknown marker '%s'"
                                  % (rel, mline, m.group(1)))
    return blocks


def commands(block):
    """[(doc line of the command, its last doc line, command,
    [(doc line, quoted line)])]"""
    out, i, lines = [], 0, block.lines
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1          # text before the first command: not compared
            continue
        at = block.first + i
        cmd = lines[i][2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd + "\n" + lines[i]
        i += 1
        quote = []
        while i < len(lines) and not lines[i].startswith("$ "):
            quote.append((block.first + i, lines[i]))
            i += 1
        out.append((at, block.first + i - len(quote) - 1, cmd, quote))
    return out


def match(quote, actual):
    """Aligns the quoted lines with the output. Returns (ok, expected, bad):
    expected is the quote with each "..." replaced by the lines it stands
    for (for the diff), bad the doc line of the first quoted line that does
    not match (None when ok)."""
    q = [(n, normalise(l), is_skip(l)) for n, l in quote]
    a = [normalise(l) for l in actual]
    while q and not q[-1][2] and q[-1][1] == "":
        q.pop()
    while a and a[-1] == "":
        a.pop()
    ok = greedy(q, a)
    if ok:
        return True, None, None
    # The cheapest alignment (a "..." takes any lines for free, every other
    # line costs 1 unless it is equal), for a diff of the real differences.
    inf = float("inf")
    nq, na = len(q), len(a)
    dp = [[inf] * (na + 1) for _ in range(nq + 1)]
    dp[0][0] = 0
    for j in range(1, na + 1):
        dp[0][j] = j
    for i in range(1, nq + 1):
        skip, line = q[i - 1][2], q[i - 1][1]
        row, prev = dp[i], dp[i - 1]
        row[0] = prev[0] + (0 if skip else 1)
        for j in range(1, na + 1):
            if skip:
                row[j] = min(prev[j], row[j - 1])
            else:
                row[j] = min(prev[j - 1] + (0 if a[j - 1] == line else 1),
                             prev[j] + 1, row[j - 1] + 1)
    if dp[nq][na] == 0:
        return True, None, None
    expected, bad, i, j = [], None, nq, na
    while i > 0 or j > 0:
        if i > 0 and q[i - 1][2]:
            if j > 0 and dp[i][j] == dp[i][j - 1]:
                expected.append(a[j - 1])
                j -= 1
            else:
                i -= 1
            continue
        if i > 0 and j > 0 and dp[i][j] == dp[i - 1][j - 1] + (
                0 if a[j - 1] == q[i - 1][1] else 1):
            if a[j - 1] != q[i - 1][1]:
                bad = q[i - 1][0]
            expected.append(q[i - 1][1])
            i, j = i - 1, j - 1
        elif i > 0 and dp[i][j] == dp[i - 1][j] + 1:
            bad = q[i - 1][0]
            expected.append(q[i - 1][1])
            i -= 1
        else:
            if i < nq:
                bad = q[i][0]
            elif q:
                bad = q[-1][0] + 1
            j -= 1
    expected.reverse()
    return False, expected, bad


def greedy(q, a):
    """The quote matches the output, each "..." taking the lines up to the
    first that equals the next quoted line (the usual case, and fast; when
    it fails, match() tries every alignment)."""
    j = 0
    for k, (n, line, skip) in enumerate(q):
        if skip:
            nxt = next((x for x in q[k + 1:] if not x[2]), None)
            if nxt is None:
                return True
            while j < len(a) and a[j] != nxt[1]:
                j += 1
            if j == len(a):
                return False
            continue
        if j < len(a) and a[j] == line:
            j += 1
            continue
        return False
    return j == len(a)


def run(cmd, cwd, env, timeout):
    """Runs cmd with bash in cwd, stdout and stderr on one pseudo-terminal
    (so that they interleave as a terminal shows them: the tools buffer
    stdout only when it is not a terminal), and returns what it printed."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR            # "\n", not "\r\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen(["bash", "-c", cmd], cwd=cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave, start_new_session=True)
    os.close(slave)
    chunks, deadline, killed = [], time.time() + timeout, False
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError as e:           # EIO: every writer has closed it
                if e.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:         # done, and a child holds it open
            break
        elif time.time() > deadline:
            os.killpg(p.pid, signal.SIGKILL)
            killed = True
            break
    os.close(master)
    p.wait()
    out = b"".join(chunks).decode("utf-8", "replace")
    if killed:
        out += "\n(check_docs.py: killed after %g s)" % timeout
    return out


def have_module(name, root):
    python = os.path.join(root, ".venv", "bin", "python")
    if not os.path.exists(python):
        python = sys.executable
    return subprocess.run([python, "-c", "import " + name],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def setup_dir(d, root, build, files, inputs):
    os.makedirs(d)
    for name in sorted(os.listdir(root)):
        if name in (".git", "build"):
            continue
        os.symlink(os.path.join(root, name), os.path.join(d, name))
    os.symlink(build, os.path.join(d, "build"))
    if os.path.isdir(inputs):
        for name in sorted(os.listdir(inputs)):
            shutil.copy(os.path.join(inputs, name), os.path.join(d, name))
    for name, text in files.items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.write(text)


def update_doc(root, path, edits):
    """edits: [(first doc line, last doc line (inclusive) or first - 1 for
    an empty quote, new lines)], applied from the bottom up."""
    full = os.path.join(root, path)
    with open(full, encoding="utf-8") as f:
        text = f.read().split("\n")
    for first, last, new in sorted(edits, reverse=True):
        text[first - 1:last] = new
    with open(full, "w", encoding="utf-8") as f:
        f.write("\n".join(text))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True, help="the repository")
    p.add_argument("--build", default=os.environ.get("MUIR_BUILD_DIR"),
                   help="the build under test (default: $MUIR_BUILD_DIR)")
    p.add_argument("--tmp", required=True, help="scratch folder (lit's %%t)")
    p.add_argument("--only", action="append", default=[],
                   help="FILE, or FILE:LINE of a line in a block (repeatable)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds per command")
    p.add_argument("--update", action="store_true",
                   help="write the outputs into the docs (see the header)")
    args = p.parse_args()
    root = os.path.abspath(args.root)
    if not args.build:
        sys.exit("error: no build: give --build or set MUIR_BUILD_DIR")
    build = os.path.abspath(args.build)
    inputs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")
    if os.path.exists(args.tmp):
        shutil.rmtree(args.tmp)
    os.makedirs(args.tmp)

    errors = []
    blocks = read_blocks(root, errors)
    files = {}
    for b in blocks:
        if b.kind == "file":
            if b.arg in files:
                errors.append("%s:%d: the file '%s' is given twice"
                              % (b.path, b.line, b.arg))
            files[b.arg] = "\n".join(b.lines) + "\n"
    for e in errors:
        print("FAIL " + e)

    env = dict(os.environ)
    env["PATH"] = os.path.join(build, "bin") + os.pathsep + env.get("PATH", "")
    env["TERM"] = "dumb"                  # a terminal without colours
    env["MUIR_CACHE_DIR"] = os.path.join(os.path.abspath(args.tmp), "cache")
    env.pop("COLUMNS", None)

    runs = [b for b in blocks if b.kind == "run"]
    if args.only:
        def wanted(b):
            for o in args.only:
                f, _, l = o.partition(":")
                if os.path.normpath(f) == b.path and (
                        not l or b.line - 1 <= int(l) <= b.line + len(b.lines) + 1):
                    return True
            return False
        runs = [b for b in runs if wanted(b)]
    failed, ncmd, per_file, edits, skipped = 0, 0, {}, {}, 0
    t_all = time.time()
    for n, b in enumerate(runs):
        d = os.path.join(args.tmp, "%d-%s-%d" % (n, b.path.replace("/", "_"),
                                                 b.line))
        missing = [m for m in b.arg if not have_module(m, args.root)]
        if missing:
            print("SKIP %s:%d (needs %s)" % (b.path, b.line, ", ".join(missing)))
            skipped += 1
            continue
        setup_dir(d, root, build, files, inputs)
        t0 = time.time()
        ok_block, updated = True, False
        for at, end, cmd, quote in commands(b):
            ncmd += 1
            out = run(cmd, d, env, args.timeout)
            actual = out.split("\n")
            if actual and actual[-1] == "":
                actual.pop()
            ok, expected, bad = match(quote, actual)
            if ok:
                continue
            if args.update and not any(is_skip(l) for _, l in quote):
                first = end + 1
                last = quote[-1][0] if quote else end
                while actual and actual[-1].rstrip() == "":
                    actual.pop()
                edits.setdefault(b.path, []).append(
                    (first, last, [l.rstrip() for l in actual]))
                print("UPDATED %s:%d: $ %s" % (b.path, at, cmd))
                updated = True
                continue
            ok_block = False
            if bad is None:
                bad = end + 1
            print("FAIL %s:%d: the output of `%s` differs from the quote "
                  "(first at %s:%s)" % (b.path, at, cmd, b.path, bad))
            a = [normalise(l) for l in actual]
            while a and a[-1] == "":
                a.pop()
            for l in difflib.unified_diff(
                    expected, a, "%s:%d (quoted)" % (b.path, end + 1),
                    "output of: $ %s" % cmd, lineterm="", n=3):
                print("  " + l)
        dt = time.time() - t0
        if ok_block:
            print("%s %s:%d (%.1f s)" % ("UPDATED" if updated else "PASS",
                                         b.path, b.line, dt))
        else:
            failed += 1
        per_file[b.path] = per_file.get(b.path, 0) + 1
    for path, e in edits.items():
        update_doc(root, path, e)
    print("checked %d blocks, %d commands (%s)%s in %.1f s; %d failed"
          % (len(runs) - skipped, ncmd,
             ", ".join("%s %d" % kv for kv in sorted(per_file.items())),
             ", %d skipped" % skipped if skipped else "",
             time.time() - t_all, failed + len(errors)))
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
