#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety, as errors) over every translation unit of
# build/release that uses an annotated lock (vigil/common/mutex.h) directly or through a header
# it includes from the project. Syntax-only: fast, no objects. Needs clang and build/release
# configured (it reads build/release/compile_commands.json). In a unity build (VIGIL_UNITY_BUILD)
# each source of a batch is still checked on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 - <<'PY'
import hashlib, json, os, re, shlex, shutil, subprocess, sys, tempfile
root = os.getcwd()
commands = json.load(open("build/release/compile_commands.json"))
annotated = re.compile(r"VIGIL_GUARDED_BY|VIGIL_REQUIRES|MutexLock")
include = re.compile(r'#include "([^"]+)"')
def mentions(path, depth=0):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return False
    if annotated.search(text):
        return True
    if depth == 1:
        return False
    for inc in include.findall(text):
        for base in ("include", "src"):
            if mentions(os.path.join(root, base, inc), depth + 1):
                return True
    return False
# A unity build (VIGIL_UNITY_BUILD) compiles a batch of sources through one generated
# Unity/unity_<n>_<lang>.<ext> file: each source of the batch is checked with the batch's command.
unity = re.compile(r'^#include "([^"]+)"$', re.M)
def sources(c):
    if "/Unity/unity_" not in c["file"]:
        return [(c, c["file"])]
    text = open(c["file"], encoding="utf-8").read()
    return [(dict(c, command=c["command"].replace(c["file"], f), file=f), f) for f in unity.findall(text)]
units = [u for c in commands for u, f in sources(c) if f.startswith(root + "/src") and mentions(f)]
# Precompiled headers (cmake_pch.hxx) are GCC's: clang parses a copy of the header instead.
pch_copies = tempfile.mkdtemp()
def pch_copy(path):
    copy = os.path.join(pch_copies, hashlib.sha1(path.encode()).hexdigest() + ".hxx")
    if not os.path.exists(copy):
        shutil.copyfile(path, copy)
    return copy
failed = 0
for c in units:
    args = shlex.split(c["command"])
    args = [pch_copy(a) if a.endswith("/cmake_pch.hxx") else a for a in args]
    keep = ["clang++", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT"):
            skip = True
            continue
        if a in ("-c", "-MD") or a.startswith("-O") or a.startswith("-fopenmp"):
            continue
        keep.append(a)
    r = subprocess.run(keep, cwd=c["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        failed += 1
        sys.stderr.write(r.stderr)
shutil.rmtree(pch_copies)
print(f"thread-safety analysis: {len(units)} translation units, {failed} failed")
sys.exit(1 if failed else 0)
PY
