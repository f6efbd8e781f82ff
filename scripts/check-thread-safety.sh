#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety, as errors) over every translation unit of
# build/release that uses an annotated lock (vigil/common/mutex.h) directly or through a header
# it includes from the project. Syntax-only: fast, no objects; $JOBS units at a time (default 2).
# Needs clang and build/release configured (it reads build/release/compile_commands.json). In a
# unity build (VIGIL_UNITY_BUILD) each source of a batch is still checked on its own
# (scripts/clang_units.py).
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 - <<'PY'
import os, re, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, "scripts")
from clang_units import ROOT, ClangArgs, units
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
            if mentions(os.path.join(ROOT, base, inc), depth + 1):
                return True
    return False
selected = [(c, f) for c, f in units() if f.startswith(ROOT + "/src") and mentions(f)]
clang = ClangArgs()
args = ["clang++", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety", "-Wno-unknown-warning-option"]
commands = [(args + clang.flags(c["command"]), c["directory"]) for c, f in selected]
def check(command):
    return subprocess.run(command[0], cwd=command[1], capture_output=True, text=True)
failed = 0
with ThreadPoolExecutor(max_workers=int(os.environ.get("JOBS", "2"))) as pool:
    for r in pool.map(check, commands):
        if r.returncode != 0:
            failed += 1
            sys.stderr.write(r.stderr)
clang.close()
print(f"thread-safety analysis: {len(selected)} translation units, {failed} failed")
sys.exit(1 if failed else 0)
PY
