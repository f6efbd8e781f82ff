"""`cmake --install` places a package that works on its own: with only the installed files on the
path, `import vigil` loads the installed extension and starts jobs with the installed `vigil`."""
import os
import subprocess
import sys
import tempfile

import pytest

SCRIPT = """
import sys, numpy as np, vigil
print(vigil.__file__)
print(vigil._vigil_binary())
db = vigil.connect(sys.argv[1])
t = db.create_table("t", {"id": np.arange(100)})
print(t.create_scalar_index("id", wait=True, timeout=120).state)
db.stop_leader()
"""


def test_the_installed_package_runs_a_job_with_the_installed_vigil():
    build = os.environ.get("VIGIL_BUILD_DIR")
    if not build:
        pytest.fail("VIGIL_BUILD_DIR is not set (ctest sets it to the build directory)")
    with tempfile.TemporaryDirectory() as prefix:
        installed = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                                   check=False)
        assert installed.returncode == 0, installed.stderr
        site = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "dist-packages")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIGIL_BINARY")}
        env["PYTHONPATH"] = site
        env["PATH"] = "/usr/bin:/bin"
        done = subprocess.run(["/usr/bin/python3", "-c", SCRIPT, os.path.join(prefix, "root")], capture_output=True,
                              text=True, env=env, cwd=prefix, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        module, binary, state = done.stdout.splitlines()
        assert module == os.path.join(site, "vigil", "__init__.py")
        assert binary == os.path.join(prefix, "bin", "vigil")
        assert state == "FINISHED"


def test_the_extension_exports_its_entry_point_and_keeps_the_engine_private():
    import ctypes

    import vigil._vigil as ext

    lib = ctypes.CDLL(ext.__file__, mode=os.RTLD_LOCAL)
    assert hasattr(lib, "PyInit__vigil")
    # FAISS and the engine are linked in statically; another FAISS in the interpreter (a faiss
    # package) must neither see these nor interpose on them.
    for symbol in ("_ZNK5faiss8IndexIVF6searchElPKflPfPlPKNS_16SearchParametersE",
                   "_ZN5vigil10Checksum64EPKvm"):
        assert not hasattr(lib, symbol), symbol
