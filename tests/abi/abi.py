#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""libdroce's ABI, checked and regenerated (docs/usage.md, "ABI").

  abi.py check   --lib SO --map MAP --list LIST --include DIR [--cc CC]
  abi.py update  --lib SO --map MAP --list LIST --include DIR [--cc CC]
  abi.py headers --lib SO --include DIR --cc CC --cxx CXX

check fails when
  - a function a public header declares is not in the version map, or the
    map names one no header declares (only the public API is exported, and
    all of it);
  - the library exports anything but the map's names at their map versions;
  - the exported list differs from the committed LIST: "without the map
    changing" when the map's hash is the one LIST recorded (a symbol
    vanished or moved: an ABI break), else "regenerate it";
  - a struct the public headers define changed its size or alignment from
    what LIST records (symbols alone do not show a layout break).
update adds the public functions the map lacks to its newest version node,
then (after the caller rebuilt the library) writes LIST from the library.
headers compiles every public header on its own as C11 and as C++ (-Werror)
and links a C++ program that takes every exported function's address
(C linkage: extern "C" in each header).
Exit 0 pass, 1 fail, 77 skip (meson's skip code).
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(lines):
    for line in lines:
        print("FAIL: " + line)
    sys.exit(1)


def headers_of(include):
    d = os.path.join(include, "droce")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".h"))


def include_all(f, include):
    """#include every public header into the program @p f is writing."""
    for h in headers_of(include):
        f.write("#include <droce/%s>\n" % os.path.basename(h))


def declared(include, cc):
    """Non-inline functions the public headers declare, from gcc -aux-info."""
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, "all.c")
        with open(src, "w") as f:
            include_all(f, include)
            f.write("int droce_abi_dummy;\n")
        aux = os.path.join(t, "aux.txt")
        r = subprocess.run(cc + ["-std=c11", "-I", include, "-aux-info", aux,
                                 "-fsyntax-only", src], capture_output=True, text=True)
        if r.returncode != 0:
            fail(["the public headers do not compile together:", r.stderr])
        names = set()
        real = os.path.realpath(os.path.join(include, "droce"))
        for line in open(aux):
            m = re.match(r"/\* (\S+):\d+:\S+ \*/ (.*)", line)
            if not m or " extern " not in " " + m.group(2):
                continue
            if os.path.dirname(os.path.realpath(m.group(1))) != real:
                continue
            f = re.search(r"([A-Za-z_][A-Za-z_0-9]*) \(", m.group(2))
            if f:
                names.add(f.group(1))
        return names


def layouts(include, cc):
    """'struct NAME SIZE ALIGN' of every struct the public headers define:
    the part of the ABI that is not symbols (a field added to a struct the
    application allocates changes its size)."""
    names = set()
    for h in headers_of(include):
        names |= set(re.findall(r"^\s*struct (droce_\w+) \{", open(h).read(), flags=re.M))
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, "layout.c")
        with open(src, "w") as f:
            include_all(f, include)
            f.write("#include <stdio.h>\nint main(void)\n{\n")
            for n in sorted(names):
                f.write('\tprintf("struct %s %%zu %%zu\\n", sizeof(struct %s), _Alignof(struct %s));\n'
                        % (n, n, n))
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(t, "layout")
        r = subprocess.run(cc + ["-std=c11", "-I", include, src, "-o", exe],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(["the public structs' layout program does not build:", r.stderr])
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        return set(out.splitlines())


def parse_map(path):
    """[(node, [names])] of the map's global sections."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    nodes = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z_0-9.]*)\s*\{(.*?)\}\s*([A-Za-z_0-9.]*)\s*;",
                         text, flags=re.S):
        body = m.group(2)
        g = re.search(r"global:(.*?)(local:|$)", body, flags=re.S)
        names = re.findall(r"([A-Za-z_][A-Za-z_0-9]*)\s*;", g.group(1)) if g else []
        nodes.append((m.group(1), names))
    return nodes


def exported(lib):
    r = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", lib],
                       capture_output=True, text=True, check=True)
    out = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "A":
            out.add(parts[2])
    return out


def soname(lib):
    r = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True)
    m = re.search(r"\(SONAME\).*\[(.*)\]", r.stdout)
    return m.group(1) if m else ""


def map_hash(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def read_list(path):
    meta, syms, lay = {}, set(), set()
    if not os.path.exists(path):
        return meta, syms, lay
    for line in open(path):
        line = line.strip()
        m = re.match(r"# (soname|map-sha256): (\S+)", line)
        if m:
            meta[m.group(1)] = m.group(2)
        elif line.startswith("struct "):
            lay.add(line)
        elif line and not line.startswith("#"):
            syms.add(line)
    return meta, syms, lay


def check(a):
    errs = []
    decl = declared(a.include, a.cc)
    nodes = parse_map(a.map)
    mapped = {n: node for node, names in nodes for n in names}
    for n in sorted(decl - set(mapped)):
        errs.append("%s is declared in include/droce/ but not in %s (run scripts/abi-update)"
                    % (n, os.path.basename(a.map)))
    for n in sorted(set(mapped) - decl):
        errs.append("%s is in %s but no public header declares it" % (n, os.path.basename(a.map)))
    exp = exported(a.lib)
    want = {"%s@@%s" % (n, node) for n, node in mapped.items()}
    for s in sorted(exp - want):
        errs.append("exported but not in the map: %s" % s)
    for s in sorted(want - exp):
        errs.append("in the map but not exported (gone from the library?): %s" % s)
    meta, committed, committed_lay = read_list(a.list)
    lay = layouts(a.include, a.cc)
    if lay != committed_lay:
        errs.append("the public structs' layout changed (size, alignment), as %s recorded it: "
                    "an ABI break for programs built before; if intended (no release since, or "
                    "with a SONAME bump) run scripts/abi-update:" % os.path.basename(a.list))
        errs.extend(["  + %s" % x for x in sorted(lay - committed_lay)] +
                    ["  - %s" % x for x in sorted(committed_lay - lay)])
    so = soname(a.lib)
    same_map = meta.get("map-sha256") == map_hash(a.map)
    if exp != committed or meta.get("soname") != so:
        diff = ["  + %s" % s for s in sorted(exp - committed)] + \
               ["  - %s" % s for s in sorted(committed - exp)]
        if meta.get("soname") != so:
            diff.append("  soname %s, the list has %s" % (so, meta.get("soname")))
        if same_map:
            errs.append("the exported symbols changed without the version map changing "
                        "(an ABI break: a removed or renamed function keeps its map line "
                        "and bumps the SONAME):")
        else:
            errs.append("%s changed and %s is stale: run scripts/abi-update and commit it:"
                        % (os.path.basename(a.map), os.path.basename(a.list)))
        errs.extend(diff)
    elif not same_map:
        errs.append("%s changed but %s still records the old one: run scripts/abi-update"
                    % (os.path.basename(a.map), os.path.basename(a.list)))
    if errs:
        fail(errs)
    print("PASS: %s exports the %d functions of include/droce/ at their map versions, and "
          "the %d public structs have the sizes %s records" % (so, len(exp), len(lay),
                                                             os.path.basename(a.list)))


def update(a):
    decl = declared(a.include, a.cc)
    nodes = parse_map(a.map)
    mapped = {n for _, names in nodes for n in names}
    gone = sorted(mapped - decl)
    if gone:
        fail(["no public header declares %s: removing them breaks the ABI; take them out "
              "of %s by hand and bump the soversion" % (", ".join(gone), a.map)])
    new = sorted(decl - mapped)
    if new:
        text = open(a.map).read()
        last = nodes[-1][0]
        m = re.search(r"(%s\s*\{.*?global:)(.*?)(\n\s*local:|\n\s*\})" % re.escape(last),
                      text, flags=re.S)
        names = sorted(set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", m.group(2))) | set(new))
        body = "".join("\n\t\t%s;" % n for n in names)
        text = text[:m.start(2)] + body + text[m.end(2):]
        open(a.map, "w").write(text)
        print("abi-update: added to %s: %s" % (last, " ".join(new)))
    if a.map_only:
        return
    exp = exported(a.lib)
    with open(a.list, "w") as f:
        f.write("# The symbols libdroce exports (from the built library) and the size and\n")
        f.write("# alignment of every public struct: scripts/abi-update writes this file,\n")
        f.write("# tests/abi checks the library and the headers against it.\n")
        f.write("# soname: %s\n" % soname(a.lib))
        f.write("# map-sha256: %s\n" % map_hash(a.map))
        for s in sorted(exp):
            f.write(s + "\n")
        lay = layouts(a.include, a.cc)
        for x in sorted(lay):
            f.write(x + "\n")
    print("abi-update: %s: %d symbols, %d struct layouts" % (a.list, len(exp), len(lay)))


def headers(a):
    errs = []
    with tempfile.TemporaryDirectory() as t:
        for h in headers_of(a.include):
            b = os.path.basename(h)
            src = os.path.join(t, "one.c")
            with open(src, "w") as f:
                # twice: the include guard works; a declaration after it:
                # a header of nothing but macros is still a TU
                f.write("#include <droce/%s>\n#include <droce/%s>\n"
                        "int droce_header_test;\n" % (b, b))
            for lang, cmd, std in (("C11", a.cc, ["-x", "c", "-std=c11"]),
                                   ("C++", a.cxx, ["-x", "c++", "-std=c++11"])):
                if not cmd:
                    continue
                r = subprocess.run(cmd + std + ["-Wall", "-Wextra", "-Werror", "-pedantic",
                                                "-I", a.include, "-fsyntax-only", src],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    errs.append("%s does not compile on its own as %s:\n%s" % (b, lang, r.stderr))
        if a.cxx and a.lib:
            names = sorted(s.split("@")[0] for s in exported(a.lib))
            src = os.path.join(t, "link.cc")
            with open(src, "w") as f:
                include_all(f, a.include)
                f.write("#include <cstdio>\nint main() {\n\tconst void *f[] = {\n")
                for n in names:
                    f.write("\t\treinterpret_cast<const void *>(&%s),\n" % n)
                f.write("\t};\n\tstd::printf(\"%%zu\\n\", sizeof(f) / sizeof(f[0]));\n"
                        "\treturn f[0] == nullptr;\n}\n")
            exe = os.path.join(t, "link")
            r = subprocess.run(a.cxx + ["-std=c++11", "-I", a.include, src, "-o", exe,
                                        a.lib], capture_output=True, text=True)
            if r.returncode != 0:
                errs.append("a C++ program cannot link the public functions (extern \"C\"?):\n"
                            + r.stderr[-3000:])
    if errs:
        fail(errs)
    print("PASS: %d public headers compile alone as C11 and C++; C++ links %s's functions"
          % (len(headers_of(a.include)), os.path.basename(a.lib) if a.lib else "no library"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["check", "update", "headers"])
    p.add_argument("--lib")
    p.add_argument("--map")
    p.add_argument("--list")
    p.add_argument("--include", required=True)
    p.add_argument("--cc", default="gcc")
    p.add_argument("--cxx", default="")
    p.add_argument("--map-only", action="store_true", help="update: the map only")
    a = p.parse_args()
    a.cc = a.cc.split()
    a.cxx = a.cxx.split()
    if a.what != "headers" and not shutil.which(a.cc[0]):
        print("SKIP: no %s for -aux-info" % a.cc[0])
        sys.exit(SKIP)
    {"check": check, "update": update, "headers": headers}[a.what](a)


if __name__ == "__main__":
    main()
