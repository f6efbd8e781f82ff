"""Fixtures: a fresh embedded root per test, whose leader (if a test started one) is stopped after it."""
import os
import tempfile

import pytest

import vigil


@pytest.fixture
def root():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "root")
        yield path
        if os.path.isdir(path):
            vigil.connect(path, create=False).stop_leader()


@pytest.fixture
def db(root):
    return vigil.connect(root)


@pytest.fixture
def server():
    """A `vigil serve` on loopback over a fresh root: (url, admin token, root path)."""
    yield from _serve("")


@pytest.fixture
def rate_limited_server():
    """`server` whose vigil.toml lets each user make 3 requests a second."""
    yield from _serve("[server]\nrequests_per_second_per_user = 3\n")


def _serve(settings):
    """Runs `vigil serve` over a fresh root (its vigil.toml replaced by `settings` when given) and yields
    (url, admin token, root path); stops it afterwards."""
    import signal
    import socket
    import subprocess
    import time
    import urllib.request

    binary = vigil._vigil_binary()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "root")
        init = subprocess.run([binary, "init", path], capture_output=True, text=True, check=True)
        token = next(word for word in (init.stdout + init.stderr).split() if word.startswith("vgl_"))
        if settings:
            with open(os.path.join(path, "vigil.toml"), "w") as f:
                f.write(settings)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = open(os.path.join(d, "serve.log"), "w")
        serve = subprocess.Popen([binary, "--root", path, "serve", "--listen", f"127.0.0.1:{port}"], stdout=log,
                                 stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    with urllib.request.urlopen(url + "/healthz", timeout=1):
                        break
                except OSError:
                    time.sleep(0.05)
            yield url, token, path
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=60)
            log.close()
