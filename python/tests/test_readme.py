"""The README's Python quickstart, run as written (on a root of its own)."""
import os
import re
import subprocess
import sys
import tempfile

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def quickstart():
    text = open(README, encoding="utf-8").read()
    match = re.search(r"<!-- python-quickstart -->\n```python\n(.*?)```", text, re.S)
    assert match, "README.md has no python-quickstart block"
    return match.group(1)


def test_the_readme_quickstart_is_short_and_runs():
    code = quickstart()
    assert len(code.strip().splitlines()) < 15
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "root")
        code = code.replace('"/tmp/vigil-py"', repr(root))
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                  check=False)
        finally:
            if os.path.isdir(root):
                import vigil
                vigil.connect(root, create=False).stop_leader()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "FINISHED COMMITTED"
    assert lines[1].startswith("[{'id': ") and lines[1].count("'id'") == 3
