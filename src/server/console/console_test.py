"""The web console in a real headless browser against a live `vigil serve`.

Chromium (chromium-headless-shell, as root with --no-sandbox) loads the console
served by `vigil serve`; the test reads the rendered DOM and clicks through the
DevTools protocol, so the console's own script does the work: the jobs view, a
job's timeline, an OUTCOME_UNKNOWN job resolved through the RESOLVE dialog (its
warnings shown before the confirmation), a user without ALTER who sees no action
and whom the API refuses anyway, and no request of the console without the token;
the tables view (versions over time, coverage, BUILD INDEX) and the generations
view with an older version that a reader in another process holds.
Screenshots of the jobs view, a job's timeline and a table are written to
$VIGIL_CONSOLE_SCREENSHOTS when set (the README shows them).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

websocket = pytest.importorskip("websocket", reason="python3-websocket is not installed (scripts/install-deps.sh)")

VIGIL = os.environ.get("VIGIL_BINARY", "")
CHROME = shutil.which("chromium-headless-shell") or "/usr/lib/chromium/chromium-headless-shell"
UNKNOWN_FAILPOINTS = "provider.after_segment_write=error;reconcile.after_termination_proof=error"

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROME), reason="chromium-headless-shell is not installed (scripts/install-deps.sh)")


class Server:
    """One `vigil serve` on 127.0.0.1, its port read from its first line."""

    def __init__(self, root, env=None):
        full = dict(os.environ)
        full.pop("VIGIL_ROOT", None)
        full.update(env or {})
        self.proc = subprocess.Popen([VIGIL, "--root", root, "serve", "--listen", "127.0.0.1:0", "--grace", "1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=full)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert m, line
        self.url = "http://127.0.0.1:" + m.group(1)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def call(base, token, method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if method != "GET":
        req.add_header("Idempotency-Key", "test-%f" % time.time())
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def sql(base, token, text):
    status, body = call(base, token, "POST", "/v1/sql", {"sql": text, "script": True})
    assert status == 200, body
    return body["results"]


def wait_for(base, token, job, item, values, seconds=60):
    """Waits until the job's `item` (State, Disposition, ...) is one of `values`; its detail."""
    until = time.time() + seconds
    value = None
    while time.time() < until:
        status, detail = call(base, token, "GET", "/v1/jobs/%d" % job)
        value = detail["job"][item] if status == 200 else None
        if value in values:
            return detail
        time.sleep(0.1)
    raise AssertionError("job %d has %s %s, not one of %s" % (job, item, value, values))


class Browser:
    """A headless Chromium driven through the DevTools protocol over its pipe-less port."""

    def __init__(self, workdir):
        self.profile = tempfile.mkdtemp(dir=workdir)
        self.proc = subprocess.Popen(
            [CHROME, "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0", "--user-data-dir=" + self.profile,
             "--window-size=1100,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        port = None
        for line in self.proc.stderr:
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = m.group(1)
                break
        assert port, "chromium did not start its DevTools endpoint"
        with urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port, timeout=30) as r:
            page = [t for t in json.load(r) if t["type"] == "page"][0]
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60)
        self.next_id = 0
        self.requests = []  # (url, headers) of every request the page sends
        self.send("Network.enable")
        self.send("Page.enable")

    def send(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Network.requestWillBeSent":
                r = msg["params"]["request"]
                self.requests.append((r["url"], r.get("headers", {})))
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise AssertionError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})

    def open(self, url):
        self.send("Page.navigate", url=url)

    def js(self, expression):
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError("%s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expression, seconds=30):
        until = time.time() + seconds
        while time.time() < until:
            try:
                value = self.js(expression)
            except AssertionError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError("never true: %s\n%s" % (expression, self.js("document.body.innerText")))

    def screenshot(self, name):
        out = os.environ.get("VIGIL_CONSOLE_SCREENSHOTS")
        if not out:
            return
        import base64
        os.makedirs(out, exist_ok=True)
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(os.path.join(out, name), "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        """Closes the browser and every process it started (its GPU and renderer processes
        would otherwise outlive it)."""
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        self.ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


@pytest.fixture(scope="module")
def world():
    """A root with a finished job, an OUTCOME_UNKNOWN job, and a user who may only look."""
    assert VIGIL, "VIGIL_BINARY is not set (ctest sets it)"
    work = tempfile.mkdtemp(prefix="vigil-console-")
    running = []  # what to stop, even when the setup fails half-way
    try:
        yield make_world(work, running)
    finally:
        for thing in reversed(running):
            if isinstance(thing, Server):
                thing.stop()
            else:
                thing.close()
        shutil.rmtree(work, ignore_errors=True)


def make_world(work, running):
    root = os.path.join(work, "root")
    init = subprocess.run([VIGIL, "init", root], capture_output=True, text=True, check=True)
    admin = re.search(r"vgl_[0-9a-f]{16}_[0-9a-f]{64}", init.stdout + init.stderr).group(0)
    # External tables may live in the work folder's lance/ (the external table test's dataset).
    toml = os.path.join(root, "vigil.toml")
    with open(toml) as f:
        text = f.read()
    with open(toml, "w") as f:
        f.write(text.replace("# external_table_allowed_directories = []", "external_table_allowed_directories = %s"
                             % json.dumps([os.path.join(work, "lance")])))
    server = Server(root)
    running.append(server)
    sql(server.url, admin, "CREATE DATABASE d; CREATE TABLE d.t (id BIGINT NOT NULL, cat BIGINT NOT NULL); "
        "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 1)")
    finished = sql(server.url, admin, "CREATE INDEX by_id ON d.t (id) USING BTREE")[0]["admitted_jobs"][0]
    wait_for(server.url, admin, finished, "State", {"FINISHED"})
    viewer = sql(server.url, admin, "CREATE USER viewer")[0]["rows"][0][1]
    sql(server.url, admin, "GRANT SHOW ON d.* TO viewer")
    running.remove(server)
    server.stop()
    # Every attempt of this server ends UNKNOWN and its first examination stops after the
    # termination proof; the next one is due in an hour: only an operator settles it now.
    with open(os.path.join(root, "vigil.toml")) as f:
        toml = f.read()
    toml = toml.replace('# reconcile_initial_backoff_seconds = "30s"', 'reconcile_initial_backoff_seconds = "1h"')
    toml = toml.replace('# reconcile_max_backoff_seconds = "30m"', 'reconcile_max_backoff_seconds = "2h"')
    with open(os.path.join(root, "vigil.toml"), "w") as f:
        f.write(toml)
    server = Server(root, {"VIGIL_FAILPOINTS": UNKNOWN_FAILPOINTS})
    running.append(server)
    unknown = sql(server.url, admin, "CREATE INDEX by_cat ON d.t (cat) USING BITMAP")[0]["admitted_jobs"][0]
    wait_for(server.url, admin, unknown, "State", {"OUTCOME_UNKNOWN"})
    browser = Browser(work)
    running.append(browser)
    return {"url": server.url, "admin": admin, "viewer": viewer, "finished": finished, "unknown": unknown,
            "browser": browser, "root": root, "work": work}


def test_without_a_token_the_console_asks_for_one_and_calls_no_api(world):
    b = world["browser"]
    b.requests.clear()
    b.open(world["url"] + "/console")
    b.wait("document.getElementById('token') !== null")
    assert b.js("document.querySelector('label[for=token]').textContent") == "API token"
    assert not [u for u, _ in b.requests if "/v1/" in u], b.requests


def test_the_jobs_view_lists_every_job_with_its_state(world):
    b = world["browser"]
    b.open(world["url"] + "/console#/jobs&token=" + world["admin"])
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length == 2")
    states = b.js("Array.from(document.querySelectorAll('#jobs-table tbody tr'), r => r.dataset.state)")
    assert states == ["FINISHED", "OUTCOME_UNKNOWN"]
    # The view follows the listing's event stream.
    b.wait("document.getElementById('jobs-live').textContent.includes('(live)')")
    assert any("/v1/jobs/stream?" in u for u, _ in b.requests), b.requests
    # The token left the address bar at once; the user is named.
    assert "token" not in b.js("location.href")
    assert b.wait("document.getElementById('who').textContent") == "admin (admin)"
    b.screenshot("console-jobs.png")
    # A filter narrows the listing through the API.
    b.js("document.getElementById('filter-state').value = 'OUTCOME_UNKNOWN';"
         "document.querySelector('.filters button').click()")
    b.wait("document.querySelectorAll('#jobs-table tbody tr').length == 1 && "
           "document.querySelector('#jobs-table tbody tr').dataset.state == 'OUTCOME_UNKNOWN'")
    # Every API request of the console carried the token.
    api = [(u, h) for u, h in b.requests if "/v1/" in u]
    assert api and all(h.get("Authorization") == "Bearer " + world["admin"] for _, h in api), api


def test_a_job_page_draws_its_timeline(world):
    b = world["browser"]
    b.open(world["url"] + "/console#/jobs/%d" % world["finished"])
    b.wait("document.querySelectorAll('#timeline li').length >= 4")
    kinds = b.js("Array.from(document.querySelectorAll('#timeline li'), li => li.dataset.kind)")
    assert kinds[:3] == ["ADMITTED", "DISPATCHED", "RESULT"], kinds
    assert "REFRESH_DONE" in kinds
    assert b.js("document.querySelector('[data-item=State]').textContent") == "FINISHED"
    assert b.js("document.getElementById('resolve-job')") is None  # nothing to resolve


def test_an_unknown_job_is_resolved_through_the_console_after_its_warnings(world):
    b = world["browser"]
    job = world["unknown"]
    b.open(world["url"] + "/console#/jobs/%d" % job)
    b.wait("document.getElementById('resolve-job') !== null")
    b.js("document.getElementById('resolve-job').click()")
    b.wait("document.getElementById('resolve-dialog').open")
    # The warnings of the chosen action are shown before anything is confirmed.
    b.js("document.querySelector('input[value=FORCE_RELEASE]').click()")
    warnings = b.wait("document.getElementById('resolve-warnings').innerText")
    assert "an old executor may still commit after the release" in warnings
    # Without a comment nothing is sent.
    b.js("document.getElementById('resolve-confirm').click()")
    assert "comment is required" in b.js("document.getElementById('resolve-error').textContent")
    status, detail = call(world["url"], world["admin"], "GET", "/v1/jobs/%d" % job)
    assert detail["job"]["State"] == "OUTCOME_UNKNOWN"
    b.js("document.getElementById('resolve-comment').value = 'checked the table by hand';"
         "document.getElementById('resolve-confirm').click()")
    b.wait("document.getElementById('job-message').textContent == 'Resolve: done.'")
    # The outcome stays unknown; the operator's decision released the name, after a refresh.
    settled = wait_for(world["url"], world["admin"], job, "Disposition", {"FORCE_RELEASED"})
    assert settled["job"]["State"] == "OUTCOME_UNKNOWN"
    assert settled["job"]["LastResolutionAction"] == "FORCE_RELEASE"
    assert settled["job"]["LastResolvedBy"] == "admin"
    b.wait("Array.from(document.querySelectorAll('#timeline li'), li => li.dataset.kind)"
           ".some(k => k.startsWith('FORCE'))")
    # Resolved, it offers no second resolution.
    b.open(world["url"] + "/console#/jobs/%d" % job)
    b.wait("document.querySelector('[data-item=Disposition]') !== null && "
           "document.querySelector('[data-item=Disposition]').textContent == 'FORCE_RELEASED'")
    assert b.js("document.getElementById('resolve-job')") is None
    b.screenshot("console-job.png")


def test_a_user_without_alter_sees_no_action_and_the_api_refuses_anyway(world):
    b = world["browser"]
    b.js("sessionStorage.clear()")
    call(world["url"], world["admin"], "GET", "/v1/jobs/%d" % world["unknown"])
    b.open(world["url"] + "/console#/jobs/%d&token=%s" % (world["unknown"], world["viewer"]))
    b.wait("document.getElementById('read-only') !== null")
    assert b.js("document.querySelectorAll('#job-actions button').length") == 0
    b.wait("document.getElementById('who').textContent == 'viewer'")
    status, body = call(world["url"], world["viewer"], "POST", "/v1/jobs/%d/cancel" % world["unknown"])
    assert status == 403, body


def test_the_health_view_shows_the_leader_jobs_and_requests_from_the_metrics(world):
    b = world["browser"]
    sql(world["url"], world["admin"], "SELECT count(*) FROM d.t")  # a server session reads (pins) d.t
    b.js("sessionStorage.clear()")
    b.open(world["url"] + "/console#/health&token=" + world["admin"])
    leader = b.wait("document.getElementById('h-leader') && document.getElementById('h-leader').textContent")
    assert leader.startswith("Leader: serve@127.0.0.1:"), leader
    # Each start of a server on another port registered a node; one leads.
    roles = b.js("Array.from(document.querySelectorAll('#nodes-table tbody tr'), r => r.cells[2].textContent)")
    assert roles.count("leader") == 1, roles
    # The resolved job's outcome stays unknown: the metrics count it so.
    assert b.js("document.querySelector('#h-backlog .value').textContent") == "1"
    assert b.js("document.querySelector('#h-outcomes .value').textContent") == "1 / 0"
    assert b.js("document.querySelectorAll('svg.spark polyline').length") == 8
    # Attempt outcomes, the reconcile backlog and the version pins are /metrics' numbers.
    with urllib.request.urlopen(world["url"] + "/metrics", timeout=30) as r:
        metrics = r.read().decode()

    def metric(name, label):
        m = re.search(r"^%s\{%s\} (\d+)$" % (name, label), metrics, re.M)
        assert m, (name, label, metrics)
        return m.group(1)

    assert b.js("document.querySelector('#h-attempts .value').textContent") == " / ".join(
        metric("vigil_index_job_outcomes", 'outcome="%s"' % o) for o in ("COMMITTED", "NOT_COMMITTED", "UNKNOWN"))
    assert metric("vigil_index_job_outcomes", 'outcome="UNKNOWN"') == "1"
    assert metric("vigil_index_job_reconcile", 'state="STOPPED_BY_FORCE"') == "1"  # resolved above
    assert b.js("document.querySelector('#h-reconcile .value').textContent") == "0"
    assert int(metric("vigil_version_pins", 'of="pins"')) >= 1
    b.screenshot("console-health.png")
    # A user who is not an administrator sees the numbers, and why the nodes are not shown.
    b.js("sessionStorage.clear()")
    b.open(world["url"] + "/console#/health&token=" + world["viewer"])
    refused = b.wait("document.getElementById('h-leader') && "
                     "document.getElementById('h-leader').textContent.startsWith('Nodes: ') && "
                     "document.getElementById('h-leader').textContent")
    assert "ADMIN" in refused, refused
    b.wait("document.getElementById('who').textContent == 'viewer'")


def test_console_files_carry_a_strict_policy_and_unknown_names_are_not_found(world):
    with urllib.request.urlopen(world["url"] + "/console/console.js", timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/javascript")
        csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    for name in ("../vigil.toml", "missing.js", "%2e%2e%2fvigil.toml"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(world["url"] + "/console/" + name, timeout=30)
        assert e.value.code == 404


def test_the_tables_view_shows_versions_and_coverage_and_builds_the_uncovered_rows(world):
    b, url, admin = world["browser"], world["url"], world["admin"]
    sql(url, admin, "INSERT INTO d.t VALUES (4, 2), (5, 1)")  # rows index by_id does not cover
    b.js("sessionStorage.clear()")
    b.open(url + "/console#/tables&token=" + admin)
    b.wait("document.querySelector('#tables-table tr[data-table=\"d.t\"]') !== null")
    assert b.js("document.querySelector('#tables-table tr[data-table=\"d.t\"]').cells[1].textContent") == "5"
    b.js("document.querySelector('#tables-table tr[data-table=\"d.t\"] a').click()")
    b.wait("document.querySelector('.index[data-index=by_id]') !== null")
    # Versions: the chart (uPlot's canvas) and the newest versions as the API lists them.
    status, listed = call(url, admin, "GET", "/v1/databases/d/tables/t/versions?limit=20")
    assert status == 200, listed
    shown = b.js("Array.from(document.querySelectorAll('#versions-table tbody tr'), r => Number(r.dataset.version))")
    assert shown == [v["Version"] for v in reversed(listed["versions"])], shown
    assert b.js("document.querySelector('#versions-chart canvas') !== null")
    # Coverage: the 2 new rows are uncovered, and an administrator may build them.
    assert b.js("document.querySelector('.index[data-index=by_id]').dataset.uncovered") == "2"
    assert "3 of 5 rows indexed" in b.js("document.querySelector('.index[data-index=by_id] .coverage').textContent")
    b.screenshot("console-table.png")
    b.js("document.querySelector('.build-index[data-index=by_id]').click()")
    link = b.wait("document.getElementById('build-job') && document.getElementById('build-job').getAttribute('href')")
    job = int(link.rsplit("/", 1)[1])
    status, detail = call(url, admin, "GET", "/v1/jobs/%d" % job)
    assert status == 200 and detail["job"]["Operation"] == "BUILD" and detail["job"]["IndexName"] == "by_id", detail
    # Settled before the next test counts versions and their readers (its commit comes first).
    wait_for(url, admin, job, "State", {"FINISHED", "FAILED", "OUTCOME_UNKNOWN", "COMMITTED_REFRESH_SKIPPED",
                                        "FAILED_REFRESH_SKIPPED"})
    # A user with SHOW only sees the coverage without the button, and the API refuses the build.
    b.js("sessionStorage.clear()")
    b.open(url + "/console#/tables/d/t&token=" + world["viewer"])
    b.wait("document.getElementById('table-read-only') !== null")
    assert b.js("document.querySelectorAll('.build-index').length") == 0
    status, body = call(url, world["viewer"], "POST", "/v1/databases/d/tables/t/indexes/by_id/build")
    assert status == 403, body


READER = """
import sys, vigil
db = vigil.connect(sys.argv[1], create=False, start_leader=False)
db.sql("SELECT count(*) FROM d.t")
print("ready", flush=True)
sys.stdin.read()
"""


def test_the_generations_view_shows_an_older_version_another_process_reads(world):
    b, url, admin = world["browser"], world["url"], world["admin"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.environ.get("VIGIL_PYTHONPATH", "")
    generations = "/v1/databases/d/tables/t/generations"

    def generation(version=None):
        status, api = call(url, admin, "GET", generations)
        assert status == 200, api
        return api["generations"][-1] if version is None else [g for g in api["generations"]
                                                                if g["Version"] == version][0]

    generation()  # this server now reads the published version too (vigil_orphans pins it)
    before = generation()
    assert before["Processes"] == 1, before
    held = before["Version"]
    reader = subprocess.Popen(["/usr/bin/python3", "-c", READER, world["root"]], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert reader.stdout.readline().strip() == "ready"
        assert generation(held)["Processes"] == 2  # the reader's pin
        sql(url, admin, "INSERT INTO d.t VALUES (6, 2)")
        status, api = call(url, admin, "GET", generations)
        row = [g for g in api["generations"] if g["Version"] == held][0]
        assert row["State"] == "RETIRED" and row["Readers"] >= 1 and row["HeldBytes"] == 0, row
        b.js("sessionStorage.clear()")
        b.open(url + "/console#/generations&token=" + admin)
        b.wait("document.querySelector('#all-generations tr[data-table=\"d.t\"]') !== null")
        older = b.js("document.querySelector('#all-generations tr[data-table=\"d.t\"]').cells[2].textContent")
        assert "v%d" % held in older.split(", "), older
        b.open(url + "/console#/tables/d/t")
        b.wait("document.querySelector('#generations-table tr[data-version=\"%d\"]') !== null" % held)
        cells = b.js("Array.from(document.querySelector('#generations-table tr[data-version=\"%d\"]').cells,"
                     " c => c.textContent)" % held)
        assert cells[1] == "RETIRED" and int(cells[2]) >= 1 and int(cells[3]) >= 1, cells
        # The unknown attempt's segment is an orphan, with its reason.
        assert "SEGMENT" in b.js("Array.from(document.querySelectorAll('#orphans-table tr'), r => r.dataset.reason)")
        b.js("document.getElementById('generations-title').scrollIntoView()")
        b.screenshot("console-generations.png")
    finally:
        reader.stdin.close()
        reader.wait(timeout=60)


def test_every_view_fits_a_phone_screen(world):
    b, url, admin = world["browser"], world["url"], world["admin"]
    b.send("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=2, mobile=True)
    try:
        b.js("sessionStorage.clear()")
        views = [("#/jobs&token=" + admin, "#jobs-table"), ("#/jobs/%d" % world["unknown"], "#timeline"),
                 ("#/tables", "#tables-table"), ("#/tables/d/t", "#generations-table"),
                 ("#/generations", "#all-generations"), ("#/health", "#h-leader")]
        for fragment, ready in views:
            b.open(url + "/console" + fragment)
            b.wait("document.querySelector('%s') !== null" % ready)
            width = b.js("[document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (fragment, width)
    finally:
        b.send("Emulation.clearDeviceMetricsOverride")


LANCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lance", "runner")


@pytest.mark.skipif(not os.path.isdir(os.path.join(LANCE_DIR, "node_modules", "@lancedb", "lancedb")),
                    reason="the pinned LanceDB package is not installed (scripts/install-deps.sh)")
def test_an_external_lance_table_shows_its_indexes_and_no_generations(world):
    b, url, admin = world["browser"], world["url"], world["admin"]
    data = os.path.join(world["work"], "lance")
    os.makedirs(data, exist_ok=True)
    node = ["/usr/bin/node", os.path.join(LANCE_DIR, "testdata", "lance_writer.mjs")]
    subprocess.run(node + ["create", data, "docs", "300", "8"], check=True, capture_output=True, timeout=120)
    path = os.path.join(data, "docs.lance")
    # An index LanceDB itself made, then rows it does not cover.
    made = subprocess.run(["/usr/bin/node", os.path.join(LANCE_DIR, "lance_runner.mjs"), json.dumps(
        {"op": "create_index", "dataset": path, "expected_version": 1, "name": "by_id", "column": "id",
         "index_type": "BTREE"})], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    subprocess.run(node + ["append", data, "docs", "20", "8"], check=True, capture_output=True, timeout=120)
    sql(url, admin, "CREATE EXTERNAL TABLE d.lt ENGINE = lance LOCATION '%s'" % path)
    status, detail = call(url, admin, "GET", "/v1/databases/d/tables/lt")
    assert status == 200 and detail["engine"] == "LANCE" and detail["row_count"] == 320, detail
    assert detail["location"] == path and [f["name"] for f in detail["fields"]] == ["id", "cat", "body", "vector"]
    b.js("sessionStorage.clear()")
    b.open(url + "/console#/tables&token=" + admin)
    b.wait("document.querySelector('#tables-table tr[data-table=\"d.lt\"]') !== null")
    assert "(Lance)" in b.js("document.querySelector('#tables-table tr[data-table=\"d.lt\"]').cells[0].textContent")
    b.open(url + "/console#/tables/d/lt&token=" + admin)
    b.wait("document.querySelector('.index[data-index=by_id]') !== null")
    assert path in b.js("document.getElementById('external').textContent")
    assert b.js("document.getElementById('versions-table') === null && document.getElementById('generations-table') "
                "=== null")
    assert b.js("document.querySelector('.index[data-index=by_id]').dataset.uncovered") == "20"
    assert b.js("document.querySelectorAll('.build-index[data-index=by_id]').length") == 1
    # The generations view lists Vigil's tables only, and still loads.
    b.open(url + "/console#/generations&token=" + admin)
    b.wait("document.querySelector('#all-generations tr[data-table=\"d.t\"]') !== null")
    assert b.js("document.querySelector('#all-generations tr[data-table=\"d.lt\"]') === null")


def test_past_a_hundred_tables_the_views_say_that_some_are_not_listed(world):
    b, url, admin = world["browser"], world["url"], world["admin"]
    sql(url, admin, "CREATE DATABASE many; " + " ".join("CREATE TABLE many.t%03d (id BIGINT);" % i for i in range(100)))
    b.send("Emulation.clearDeviceMetricsOverride")
    b.js("sessionStorage.clear()")
    b.open(url + "/console#/tables&token=" + admin)
    b.wait("document.getElementById('more-tables') !== null")
    assert b.js("document.querySelectorAll('#tables-table tbody tr').length") == 100
    assert "Only the first 100 tables" in b.js("document.getElementById('more-tables').textContent")
