#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety, as errors) over every translation unit of
# build/release that uses an annotated lock (vigil/common/mutex.h) directly or through a header
# it includes from the project. Syntax-only: fast, no objects. Needs clang and build/release
# configured (it reads build/release/compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 - <<'PY'
import json, os, re, shlex, subprocess, sys
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
units = [c for c in commands if c["file"].startswith(root + "/src") and mentions(c["file"])]
failed = 0
for c in units:
    args = shlex.split(c["command"])
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
print(f"thread-safety analysis: {len(units)} translation units, {failed} failed")
sys.exit(1 if failed else 0)
PY
