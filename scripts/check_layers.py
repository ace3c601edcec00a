#!/usr/bin/env python3
"""Checks that muir's libraries layer: the graph of what each library links
is acyclic, and what each library uses it links.

The build runs it after the libraries (the muir-check-layers target in
CMakeLists.txt); test/Build/layers.test runs it on the build and on
graphs made to fail. Input: a layers file the configure step writes, one
line per library:

    NAME<TAB>ARCHIVE<TAB>SOURCE_DIR<TAB>DEP DEP ...<TAB>SOURCE SOURCE ...

(DEPs: the muir libraries NAME links directly; SOURCEs: its files). Three checks:

1. The declared graph has no cycle.
2. Symbols: a symbol a library's archive needs that another muir archive
   defines belongs to a library it reaches (llvm-nm; with --nm).
3. Includes: a muir header a library's sources include belongs to a
   library it reaches. Headers are owned by folder: include/muir/<F>/ and
   lib/<F>/ are lib/<F>'s library (muir/<F>/<G>.h is lib/<F>/<G>/'s where that is a
   library), dialects/<D>/ (included as "<D>/...") is its dialect's;
   include/muir/Support/ is header-only, below every library (what of it
   is compiled, MuirVersion, the symbol check covers). The runtime's C
   headers (muir-rt/) hold both contracts and inline helpers and are left
   to the symbol check too.

Exits 1 with one line per finding, naming the libraries and the file,
symbol or cycle.
"""
import argparse
import os
import re
import subprocess
import sys


def read_layers(path):
    libs = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 5:
                sys.exit(f"{path}:{number}: expected 5 tab-separated fields, "
                         f"found {len(parts)}")
            name, archive, source_dir, deps, sources = parts
            libs[name] = {"archive": archive, "dir": source_dir,
                          "deps": deps.split(), "sources": sources.split()}
    return libs


def find_cycle(libs):
    """A cycle of the declared graph as a list of names, or None."""
    state = {}
    stack = []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for dep in libs[name]["deps"]:
            if dep not in libs:
                continue
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                cycle = visit(dep)
                if cycle:
                    return cycle
        stack.pop()
        state[name] = "done"
        return None

    for name in sorted(libs):
        if name not in state:
            cycle = visit(name)
            if cycle:
                return cycle
    return None


def reach(libs):
    """Each library's transitive dependencies, itself included."""
    memo = {}

    def go(name):
        if name not in memo:
            memo[name] = {name}
            for dep in libs[name]["deps"]:
                if dep in libs:
                    memo[name] |= go(dep)
        return memo[name]

    return {name: go(name) for name in libs}


def nm(tool, archive, undefined):
    """The archive's undefined symbols, or the ones it defines strongly:
    a weak or COMDAT definition (an inline function, a template, a
    vtable: nm's W, V and u) may be in many archives and is no one's."""
    args = [tool, "--no-sort", "-P"]
    args += ["-u"] if undefined else ["--defined-only", "-g"]
    out = subprocess.run(args + [archive], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{tool} {archive}: {out.stderr.strip()}")
    symbols = set()
    for line in out.stdout.split("\n"):
        fields = line.split()
        if len(fields) < 2 or line.endswith(":"):
            continue  # blank, or an archive member's header
        name, kind = fields[0], fields[1]
        if undefined or kind in "TDBRSCG":
            symbols.add(name)
    return symbols


def check_symbols(libs, reaches, tool):
    findings = []
    defined = {}
    # Archives first: a shared library that links one re-exports its
    # symbols, which stay the archive's.
    def archives_first(item):
        return (not item[1]["archive"].endswith(".a"), item[0])
    for name, lib in sorted(libs.items(), key=archives_first):
        for symbol in nm(tool, lib["archive"], undefined=False):
            defined.setdefault(symbol, name)
    for name, lib in sorted(libs.items()):
        missing = {}
        for symbol in nm(tool, lib["archive"], undefined=True):
            owner = defined.get(symbol)
            if owner and owner not in reaches[name]:
                missing.setdefault(owner, symbol)
        for owner, symbol in sorted(missing.items()):
            findings.append(f"{name} uses {owner} (symbol {symbol}) but does "
                            f"not link it")
    return findings


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(libs, reaches, source_root):
    findings = []
    # Folder -> library: lib/<F> and include/muir/<F> are lib/<F>'s,
    # dialects/<D> is "<D>/..."'s.
    owner_of = {}
    for name, lib in libs.items():
        rel = os.path.relpath(lib["dir"], source_root)
        top, _, folder = rel.partition(os.sep)
        if top == "lib" and folder and folder != "Support":
            owner_of["muir/" + folder.replace(os.sep, "/")] = name
        elif top == "dialects" and folder and os.sep not in folder:
            owner_of[folder] = name

    def header_owner(header):
        parts = header.split("/")
        if parts[0] != "muir":
            return owner_of.get(parts[0])
        if parts[1:2] == ["Support"]:
            return None  # header-only, below every library
        # muir/A/B.h is lib/A/B/'s when that is a library (MuirState's
        # muir/Runner/State.h), else lib/A/'s.
        stem = os.path.splitext("/".join(parts[:3]))[0]
        return owner_of.get(stem, owner_of.get("/".join(parts[:2])))

    # A library's files: its sources, the private headers beside them, and
    # the public headers of the folder it owns (include/muir/<F>/).
    files_of = {}
    for name, lib in libs.items():
        files = set(lib["sources"])
        for source in lib["sources"]:
            folder = os.path.dirname(source)
            files |= {os.path.join(folder, f) for f in os.listdir(folder)
                      if f.endswith((".h", ".def"))}
        files_of[name] = files
    for key, name in owner_of.items():
        if not key.startswith("muir/"):
            continue
        folder = os.path.join(source_root, "include", key)
        if os.path.isdir(folder):
            files_of[name] |= {os.path.join(folder, f)
                               for f in os.listdir(folder)
                               if f.endswith((".h", ".def"))}
    for name in sorted(libs):
        for path in sorted(files_of[name]):
            with open(path, errors="replace") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                owner = header_owner(m.group(1))
                if owner and owner not in reaches[name]:
                    line = text.count("\n", 0, m.start()) + 1
                    findings.append(
                        f"{os.path.relpath(path, source_root)}:{line}: "
                        f"{name} includes \"{m.group(1)}\", a header of "
                        f"{owner}, which it does not link")
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("layers", help="the layers file the build writes")
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--nm", help="llvm-nm, to check symbols")
    parser.add_argument("--stamp", help="touched when every check passes")
    args = parser.parse_args()

    libs = read_layers(args.layers)
    cycle = find_cycle(libs)
    if cycle:
        print("muir's library graph has a cycle: " + " -> ".join(cycle))
        return 1
    reaches = reach(libs)
    findings = check_includes(libs, reaches, args.source_root)
    if args.nm:
        findings += check_symbols(libs, reaches, args.nm)
    for finding in findings:
        print(finding)
    if findings:
        return 1
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
