"""The translation units of build/release (compile_commands.json) as clang tools need them.

In a unity build (VIGIL_UNITY_BUILD) each source of a batch is given the batch's command on its
own; GCC's precompiled headers (cmake_pch.hxx) are replaced by a copy clang parses as a header;
GCC-only and output flags are dropped. Used by check-thread-safety.sh and check-tidy.sh.
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UNITY = re.compile(r'^#include "([^"]+)"$', re.M)


def _sources(c):
    if "/Unity/unity_" not in c["file"]:
        return [(c, c["file"])]
    text = open(c["file"], encoding="utf-8").read()
    return [(dict(c, command=c["command"].replace(c["file"], f), file=f), f) for f in _UNITY.findall(text)]


def units(build="build/release"):
    """(command dict, source path) of every project source under src/ and bench/, one per source."""
    commands = json.load(open(os.path.join(ROOT, build, "compile_commands.json")))
    seen = set()
    out = []
    for c in commands:
        for u, f in _sources(c):
            if not (f.startswith(ROOT + "/src/") or f.startswith(ROOT + "/bench/")) or f in seen:
                continue
            seen.add(f)
            out.append((u, f))
    return out


class ClangArgs:
    """Turns a GCC compile command into clang arguments (no output, no optimization)."""

    def __init__(self):
        self._pch_dir = tempfile.mkdtemp()

    def close(self):
        shutil.rmtree(self._pch_dir)

    def _pch_copy(self, path):
        copy = os.path.join(self._pch_dir, hashlib.sha1(path.encode()).hexdigest() + ".hxx")
        if not os.path.exists(copy):
            shutil.copyfile(path, copy)
        return copy

    def flags(self, command):
        """The compiler flags of `command` without the compiler, the source, outputs and GCC-only flags."""
        args = shlex.split(command)
        keep, skip = [], False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MT"):
                skip = True
                continue
            if a in ("-c", "-MD") or a.startswith("-O") or a.startswith("-fopenmp"):
                continue
            keep.append(self._pch_copy(a) if a.endswith("/cmake_pch.hxx") else a)
        return keep
