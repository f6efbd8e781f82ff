#!/usr/bin/env bash
# clang-tidy with the checks of .clang-tidy (the ones the code passes, as errors) over every
# source of build/release, $JOBS at a time. Needs clang-tidy and build/release configured.
# Long (every translation unit is parsed again): run by scripts/test-long.sh, not by CI.
# Arguments, when given, are regular expressions: only sources whose path matches one are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}" /usr/bin/python3 - "$@" <<'PY'
import concurrent.futures, os, re, subprocess, sys
sys.path.insert(0, "scripts")
from clang_units import ROOT, ClangArgs, units
patterns = [re.compile(p) for p in sys.argv[1:]]
selected = [(c, f) for c, f in units() if not patterns or any(p.search(f) for p in patterns)]
clang = ClangArgs()
header_filter = "^" + re.escape(ROOT) + "/(src|include|bench)/"
def check(unit):
    c, f = unit
    flags = [a for a in clang.flags(c["command"]) if a != f]
    r = subprocess.run(["clang-tidy", "--quiet", "--warnings-as-errors=*", "--header-filter=" + header_filter, f,
                        "--"] + flags + ["-Wno-unknown-warning-option"],
                       cwd=c["directory"], capture_output=True, text=True)
    return f, r.returncode, r.stdout
failed = 0
with concurrent.futures.ThreadPoolExecutor(int(os.environ["JOBS"])) as pool:
    for f, rc, out in pool.map(check, selected):
        if rc != 0:
            failed += 1
            sys.stderr.write(out)
clang.close()
print(f"clang-tidy: {len(selected)} translation units, {failed} failed")
sys.exit(1 if failed else 0)
PY
