"""External Lance tables through the `vigil sql` shell, on datasets LanceDB itself writes.

Every outcome is checked with LanceDB's own listing (the runner's `inspect`, which reads
`listIndices()`): CREATE of IVF_PQ, BTREE, BITMAP and FTS indexes, REPLACE, DROP and BUILD
to FINISHED; a name fence against a concurrent same-name request; the worker killed (SIGKILL)
before, after and at a random moment of LanceDB's commit, settled only from evidence that binds
the commit to the attempt (no later version: NOT_COMMITTED), else OUTCOME_UNKNOWN for RESOLVE,
also when an outside writer made exactly the requested change; an untyped error after
LanceDB's commit is OUTCOME_UNKNOWN; a dataset another writer changed between admission and
execution (STALE_ADMISSION); a missing, a corrupt and a badly named dataset; statements that
read rows refused; DROP TABLE leaving the dataset; the [lance] settings. Metadata: the
physical entries of the manifest with the version each was built from, logical inspection
failing on entries that disagree with LanceDB's listing, and externally created index names
that differ only by case (non-ASCII too).
"""

import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "runner", "lance_runner.mjs")
WRITER = os.path.join(HERE, "runner", "testdata", "lance_writer.mjs")
sys.path.insert(0, os.path.join(HERE, "runner", "testdata"))
import lance_manifest  # noqa: E402
NODE = shutil.which("node")
VIGIL = os.environ.get("VIGIL_CLI", "")

pytestmark = pytest.mark.skipif(
    NODE is None or not os.path.isdir(os.path.join(HERE, "runner", "node_modules", "@lancedb", "lancedb"))
    or not os.path.exists(VIGIL),
    reason="node, the pinned LanceDB package (scripts/install-deps.sh) or the vigil binary (VIGIL_CLI) is missing")


def writer(op, folder, rows, dim=16, variant=""):
    """LanceDB writes `folder`/docs.lance: NOT NULL columns, Float32 vectors;
    `variant` nullable / float64 / longname (see lance_writer.mjs) for refusals."""
    out = subprocess.run([NODE, WRITER, op, folder, "docs", str(rows), str(dim)] + ([variant] if variant else []),
                         capture_output=True, text=True, timeout=300, check=True)
    return int(out.stdout.split()[-1])


def outside_index(data, name, column):
    """Another LanceDB writer makes a BTREE index named `name` (any text) on `column` of docs.lance."""
    out = subprocess.run([NODE, WRITER, "index", data, "docs", name, column], capture_output=True, text=True,
                         timeout=300, check=True)
    return int(out.stdout.split()[-1])


def inspect(path):
    """LanceDB's own view of the dataset: version, indexes (listIndices) and data."""
    p = subprocess.run([NODE, RUNNER, json.dumps({"op": "inspect", "dataset": path})], capture_output=True,
                       text=True, timeout=300)
    last = json.loads(p.stdout.splitlines()[-1])
    assert last["event"] == "result", last
    return last


def indexes(path):
    return {ix["name"]: ix for ix in inspect(path)["indexes"]}


class Root:
    """A fresh root whose supervisor settles jobs quickly; `sql` runs `vigil sql -c`."""

    JOBS = ("[jobs]\nsupervise_idle_exit_seconds = 2\nreconcile_initial_backoff_seconds = 1\n"
            "reconcile_max_backoff_seconds = 2\n")

    def __init__(self, folder, allowed):
        self.path = os.path.join(folder, "root")
        self.allowed = allowed  # [sql] external_table_allowed_directories
        subprocess.run([VIGIL, "init", self.path], check=True, capture_output=True, timeout=60)
        self.settings("")

    def settings(self, extra):
        """Replaces vigil.toml with the test's job settings, its allowed directories and `extra`."""
        with open(os.path.join(self.path, "vigil.toml"), "w") as f:
            f.write(self.JOBS + "[sql]\nexternal_table_allowed_directories = %s\n" % json.dumps(self.allowed) + extra)

    def sql(self, text, failpoints="", check=True):
        env = dict(os.environ, VIGIL_ROOT=self.path)
        env.pop("VIGIL_FAILPOINTS", None)
        if failpoints:
            env["VIGIL_FAILPOINTS"] = failpoints
        p = subprocess.run([VIGIL, "sql", "-c", text], capture_output=True, text=True, timeout=600, env=env)
        if check:
            assert p.returncode == 0, p.stdout + p.stderr
        return p.returncode, p.stdout + p.stderr

    def stop_supervisor(self):
        """Stops the background leader, so that the next statement starts one with its own failpoints."""
        subprocess.run([VIGIL, "--root", self.path, "supervise", "--stop"], capture_output=True, timeout=120)

    def job(self, job_id):
        _, out = self.sql("SHOW INDEX JOB %d" % job_id)
        fields = {}
        for line in out.splitlines():
            m = re.match(r"^\| (\w+)\s+\| (.*?)\s*\|$", line)
            if m:
                fields[m.group(1)] = m.group(2)
        return fields

    def wait_running(self, job_id, timeout=60):
        deadline = time.time() + timeout
        while True:
            code, out = self.sql("SHOW INDEX JOB %d" % job_id, check=False)
            if code == 0 and re.search(r"\| State\s+\| RUNNING", out):
                return
            assert time.time() < deadline, out
            time.sleep(0.1)

    def settle(self, job_id, timeout=90):
        """The job once it is final: FINISHED, FAILED or CANCELLED."""
        deadline = time.time() + timeout
        while True:
            j = self.job(job_id)
            if j["State"] in ("FINISHED", "FAILED", "CANCELLED"):
                return j
            assert time.time() < deadline, j
            time.sleep(0.5)

    def stays_unknown(self, job_id, timeout=90):
        """The job once its termination is proven, read again after two more reconciler passes
        that each read the Lance history and proved nothing: each the recovery pass of a supervisor
        started afresh (whatever the root's backoff), which signals with a file."""
        deadline = time.time() + timeout
        while self.job(job_id)["ReconcileState"] != "STOPPED_TERMINATION_PROVEN":
            assert time.time() < deadline, self.job(job_id)
            time.sleep(0.5)
        passed = os.path.join(tempfile.mkdtemp(prefix="vigil-pass-"), "unproven")
        env = dict(os.environ, VIGIL_FAILPOINTS="reconciler.lance_unproven=signal(%s)" % passed)
        for _ in range(2):
            if os.path.exists(passed):
                os.remove(passed)
            subprocess.run([VIGIL, "--root", self.path, "supervise", "--restart"], env=env, check=True,
                           capture_output=True, timeout=120)
            while not os.path.exists(passed):
                assert time.time() < deadline, ("no reconciler pass read the history", self.job(job_id))
                time.sleep(0.05)
        return self.job(job_id)


def admitted(out):
    return int(re.search(r"job (\d+) admitted", out).group(1))


@pytest.fixture()
def env():
    folder = tempfile.mkdtemp(prefix="vigil-lance-sql-")
    data = os.path.join(folder, "data")
    os.makedirs(data)
    writer("create", data, 5000)
    root = Root(folder, [data])
    path = os.path.join(data, "docs.lance")
    root.sql("CREATE EXTERNAL TABLE d.docs ENGINE = lance LOCATION '%s'" % path)
    yield root, path, data
    root.stop_supervisor()
    shutil.rmtree(folder, ignore_errors=True)


def test_attach_registers_the_dataset_by_reference(env):
    root, path, data = env
    _, out = root.sql("SHOW TABLES FROM d")
    assert "docs" in out
    before = sorted(os.listdir(path))
    _, out = root.sql("CREATE EXTERNAL TABLE IF NOT EXISTS d.docs ENGINE = lance LOCATION '%s'" % path)
    assert "already exists" in out
    code, out = root.sql("CREATE EXTERNAL TABLE d.docs ENGINE = lance LOCATION '%s'" % path, check=False)
    assert code != 0 and "ALREADY_EXISTS" in out
    # Attaching wrote nothing into the dataset.
    assert sorted(os.listdir(path)) == before


def test_locations_are_confined_to_the_allowed_directories(env):
    root, path, data = env
    other = tempfile.mkdtemp(prefix="vigil-lance-tenant-")  # another tenant's folder, not allowed
    try:
        writer("create", other, 300)
        theirs = os.path.join(other, "docs.lance")
        before = sorted(os.listdir(other))
        os.symlink(theirs, os.path.join(data, "stolen.lance"))
        os.makedirs(os.path.join(other, "fake.lance", "_versions"))
        # Their dataset, a missing one, one that only looks like a dataset, and a link to theirs
        # from inside the allowed folder: each refused in the same words, nothing read or written.
        for location in [theirs, os.path.join(other, "none.lance"), os.path.join(other, "fake.lance"),
                         os.path.join(data, "stolen.lance")]:
            c, out = root.sql("CREATE EXTERNAL TABLE d.stolen ENGINE = lance LOCATION '%s'" % location, check=False)
            assert c != 0 and "PERMISSION_DENIED" in out, (location, out)
            assert ("LOCATION '%s' is refused: an external table's dataset must lie below [sql] "
                    "external_table_allowed_directories in vigil.toml, with symbolic links resolved" % location) in out
            assert "version" not in out and "NOT_FOUND" not in out, out
        assert sorted(os.listdir(other)) == before + ["fake.lance"]  # no `__manifest` made
        assert os.listdir(os.path.join(other, "fake.lance")) == ["_versions"]
        _, out = root.sql("SHOW TABLES FROM d")
        assert "stolen" not in out
        # The setting decides: empty, no external table at all; naming their folder, theirs.
        root.allowed = []
        root.settings("")
        c, out = root.sql("CREATE EXTERNAL TABLE d.again ENGINE = lance LOCATION '%s'" % path, check=False)
        assert c != 0 and "PERMISSION_DENIED" in out and "external tables are off" in out, out
        root.allowed = [other]
        root.settings("")
        _, out = root.sql("CREATE EXTERNAL TABLE d.theirs ENGINE = lance LOCATION '%s'" % theirs)
        assert "registered: Lance dataset %s at version 1" % theirs in out, out
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_each_operation_runs_to_finished_as_lancedb_lists_it(env):
    root, path, data = env
    root.sql("CREATE INDEX v ON d.docs (vector) USING ANN PROPERTIES ('metric' = 'cosine', 'num_partitions' = '4', "
             "'num_sub_vectors' = '4'); CREATE INDEX b ON d.docs (id) USING BTREE; "
             "CREATE INDEX c ON d.docs (cat) USING BITMAP; CREATE INDEX f ON d.docs (body) USING FTS")
    seen = indexes(path)
    assert {n: seen[n]["type"] for n in seen} == {"v": "IvfPq", "b": "BTree", "c": "Bitmap", "f": "FTS"}
    assert all(seen[n]["indexed_rows"] == 5000 for n in seen)
    _, out = root.sql("SHOW INDEX FROM d.docs")
    for name, kind in (("v", "IVF_PQ"), ("b", "BTREE"), ("c", "BITMAP"), ("f", "FTS")):
        assert re.search(r"\| docs\s+\| 1\s+\| %s\s+\|.*\| %s\s+\|" % (name, kind), out), out
    # vigil_indexes / vigil_index_entries read the same listing.
    _, out = root.sql("SELECT IndexName, IndexType, RowsIndexed FROM vigil_indexes('d.docs') ORDER BY IndexName")
    assert re.search(r"\| v\s+\| IVF_PQ\s+\| 5000\s+\|", out), out
    _, out = root.sql("SELECT IndexName, IndexUuid, MetadataConsistency FROM vigil_index_entries('d.docs') "
                      "WHERE IndexName = 'b'")
    assert seen["b"]["uuid"] in out and "CONSISTENT" in out

    # REPLACE builds a new index under the name; DROP removes it.
    root.sql("CREATE OR REPLACE INDEX b ON d.docs (id) USING BTREE")
    after = indexes(path)
    assert after["b"]["uuid"] != seen["b"]["uuid"] and after["v"]["uuid"] == seen["v"]["uuid"]
    root.sql("DROP INDEX c ON d.docs")
    assert "c" not in indexes(path)
    _, out = root.sql("DROP INDEX IF EXISTS c ON d.docs")
    assert "NOOP" in out

    # BUILD covers rows another LanceDB writer appended.
    writer("append", data, 1000)
    assert indexes(path)["b"]["unindexed_rows"] == 1000
    _, out = root.sql("BUILD INDEX b ON d.docs")
    j = root.job(admitted(out))
    assert j["State"] == "FINISHED" and j["Outcome"] == "COMMITTED", j
    assert indexes(path)["b"]["unindexed_rows"] == 0
    # Nothing left to cover: a NOOP without a job run (no leader runs meanwhile: none could take it).
    root.stop_supervisor()
    _, out = root.sql("BUILD INDEX b ON d.docs")
    assert "NOOP" in out
    # Vigil's attempt locks live beside the dataset and are gone once the outcome is known.
    assert not os.path.exists(path + ".vigil/_staging") or os.listdir(path + ".vigil/_staging") == []
    assert "_staging" not in os.listdir(path)


def test_the_seeds_own_create_index_statement_runs(env):
    """Seed 000 section 2.1's statement, verbatim but for the table name, as on Vigil's own tables."""
    root, path, data = env
    _, out = root.sql('CREATE INDEX idx ON d.docs (vector) USING ANN PROPERTIES ("index_type" = "IVF_PQ", '
                      '"metric" = "l2", "num_partitions" = "256", "num_sub_vectors" = "16")')
    j = root.job(admitted(out))
    assert j["State"] == "FINISHED" and j["Outcome"] == "COMMITTED", j
    seen = indexes(path)
    assert seen["idx"]["type"] == "IvfPq" and seen["idx"]["indexed_rows"] == 5000, seen
    # Any other index_type is refused before a job exists, naming the property.
    c, out = root.sql('CREATE INDEX idx2 ON d.docs (vector) USING ANN PROPERTIES ("index_type" = "HNSW", '
                      '"metric" = "l2", "num_partitions" = "4", "num_sub_vectors" = "4")', check=False)
    assert c != 0 and "INVALID_ARGUMENT" in out and "property 'index_type' must be one of IVF_PQ" in out, out
    c, out = root.sql('CREATE INDEX idx2 ON d.docs (id) USING BTREE PROPERTIES ("index_type" = "IVF_PQ")',
                      check=False)
    assert c != 0 and "INVALID_ARGUMENT" in out and "index_type" in out, out
    assert set(indexes(path)) == {"idx"}


def test_admission_refuses_what_lancedb_would(env):
    root, path, data = env
    version = inspect(path)["version"]
    for sql, code, text in [
        ("CREATE INDEX x ON d.docs (nope) USING BTREE", "INVALID_ARGUMENT", "no column 'nope'"),
        ("CREATE INDEX x ON d.docs (id) USING ANN", "INVALID_ARGUMENT", "'id' is Float64"),
        ("CREATE INDEX x ON d.docs (vector) USING ANN PROPERTIES ('bogus' = '1')", "INVALID_ARGUMENT", "'bogus'"),
        ("CREATE INDEX x ON d.docs (vector) USING ANN PROPERTIES ('num_bits' = '9')", "INVALID_ARGUMENT",
         "num_bits"),
        ("DROP INDEX nope ON d.docs", "NOT_FOUND", "does not exist"),
        ("BUILD INDEX nope ON d.docs", "NOT_FOUND", "does not exist"),
    ]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and code in out and text in out, (sql, out)
    # Vigil's caps apply to a Lance dataset too.
    root.settings("[caps]\nmax_rows = 100\n")
    c, out = root.sql("CREATE INDEX x ON d.docs (id) USING BTREE", check=False)
    assert c != 0 and "caps.max_rows = 100" in out, out
    assert inspect(path)["version"] == version  # nothing was written


def test_the_type_matrix_and_metadata_bounds_of_seed_000(env):
    """Section 2.3's column contract and Appendix A's bounds, before any job exists."""
    root, path, data = env
    for variant in ("nullable", "float64", "longname", "nullelements"):
        os.makedirs(os.path.join(data, variant))
        writer("create", os.path.join(data, variant), 300, 8, variant)
    root.sql("CREATE EXTERNAL TABLE d.nulls ENGINE = lance LOCATION '%s/nullable/docs.lance'; "
             "CREATE EXTERNAL TABLE d.wide ENGINE = lance LOCATION '%s/float64/docs.lance'; "
             "CREATE EXTERNAL TABLE d.holes ENGINE = lance LOCATION '%s/nullelements/docs.lance'" % (data, data, data))
    versions = {p: inspect(p)["version"] for p in (path, data + "/nullable/docs.lance", data + "/float64/docs.lance",
                                                   data + "/nullelements/docs.lance")}
    for sql, text in [
        ("CREATE INDEX x ON d.docs (id) USING BITMAP",
         "USING BITMAP needs a boolean, integral, string or date column; Lance column 'id' is Float64"),
        ("CREATE INDEX x ON d.docs (vector) USING ANN PROPERTIES ('num_partitions' = '4', 'num_sub_vectors' = '4', "
         "'num_bits' = '4')", "property 'num_bits' must be one of 8"),
        ("CREATE INDEX x ON d.nulls (id) USING BTREE", "USING BTREE needs a NOT NULL column; Lance column 'id' is "
         "nullable"),
        ("CREATE INDEX x ON d.nulls (cat) USING BITMAP", "Lance column 'cat' is nullable"),
        ("CREATE INDEX x ON d.nulls (vector) USING ANN PROPERTIES ('num_partitions' = '4', 'num_sub_vectors' = '4')",
         "USING IVF_PQ needs a NOT NULL column; Lance column 'vector' is nullable"),
        ("CREATE INDEX x ON d.wide (vector) USING ANN PROPERTIES ('num_partitions' = '4', 'num_sub_vectors' = '4')",
         "needs a FixedSizeList of Float16 or Float32 (a vector) column; Lance column 'vector' is "
         "FixedSizeList[8]<Float64>"),
        # Non-null elements too: Lance's schema reads every vector's elements as nullable (it keeps
        # none of their nullability), so the runner counts the null ones (every tenth row has one).
        ("CREATE INDEX x ON d.holes (vector) USING ANN PROPERTIES ('num_partitions' = '4', 'num_sub_vectors' = '4')",
         "USING IVF_PQ needs non-null Float16 or Float32 elements; Lance column 'vector' holds 30 null elements"),
        ("CREATE INDEX x ON d.docs (vector) USING ANN PROPERTIES ('num_partitions' = '4', 'num_sub_vectors' = '3')",
         "num_sub_vectors 3 does not divide the dimension"),
        ("CREATE INDEX x ON d.docs (vector) USING ANN PROPERTIES ('num_partitions' = '6000', "
         "'num_sub_vectors' = '4')", "num_partitions 6000 exceeds the 5000 rows of the snapshot"),
    ]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "INVALID_ARGUMENT" in out and text in out, (sql, out)
    _, out = root.sql("SHOW INDEX JOBS")
    assert "| x " not in out  # refused before any job existed
    assert {p: inspect(p)["version"] for p in versions} == versions  # nothing was written
    # A column name over Appendix A's 1,024 bytes: the read fails closed, nothing is registered.
    c, out = root.sql("CREATE EXTERNAL TABLE d.long ENGINE = lance LOCATION '%s/longname/docs.lance'" % data,
                      check=False)
    assert c != 0 and "RESOURCE_EXHAUSTED" in out and "a field name of 1100 bytes, more than 1024" in out, out
    assert "xxxx" not in out
    _, out = root.sql("SHOW TABLES FROM d")
    assert "long" not in out


def test_reads_and_writes_of_rows_are_refused(env):
    root, path, data = env
    for sql in ["SELECT count(*) FROM d.docs", "INSERT INTO d.docs (id) VALUES (1)", "VACUUM d.docs",
                "SHOW VERSIONS FROM d.docs"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "NOT_SUPPORTED" in out and "external LANCE table" in out, (sql, out)


def test_drop_table_unregisters_and_leaves_the_dataset(env):
    root, path, data = env
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE")
    _, out = root.sql("DROP TABLE d.docs")
    assert "unregistered" in out
    assert "b" in indexes(path)  # LanceDB still reads it, index and all
    _, out = root.sql("SHOW TABLES FROM d")
    assert "docs" not in out
    root.sql("CREATE EXTERNAL TABLE d.again ENGINE = lance LOCATION '%s'" % path)
    _, out = root.sql("SHOW INDEX FROM d.again")
    assert re.search(r"\| again\s+\| 1\s+\| b\s+\|", out), out


def test_missing_corrupt_and_badly_named_datasets(env):
    root, path, data = env
    for location, code in [(os.path.join(data, "none.lance"), "NOT_FOUND"), ("relative/docs.lance", "INVALID_ARGUMENT"),
                           (data + "/../data/docs.lance", "INVALID_ARGUMENT"), (data + "/docs", "INVALID_ARGUMENT")]:
        c, out = root.sql("CREATE EXTERNAL TABLE d.x ENGINE = lance LOCATION '%s'" % location, check=False)
        assert c != 0 and code in out, (location, out)
    _, out = root.sql("SHOW TABLES FROM d")
    assert "| x " not in out
    # A manifest that does not decode: CORRUPTION, never an older version's answer.
    versions = os.path.join(path, "_versions")
    # Lance names version v's manifest 2^64 - 1 - v: the newest has the smallest name.
    newest = min((m for m in os.listdir(versions) if m.endswith(".manifest")), key=lambda m: int(m.split(".")[0]))
    with open(os.path.join(versions, newest), "rb") as f:
        original = f.read()
    with open(os.path.join(versions, newest), "r+b") as f:
        f.truncate(20)
    c, out = root.sql("CREATE INDEX b ON d.docs (id) USING BTREE", check=False)
    assert c != 0 and "CORRUPTION" in out, out
    # One whose protobuf message was overwritten with other bytes (footer and length prefix kept):
    # CORRUPTION, quoting none of them.
    with open(os.path.join(versions, newest), "r+b") as f:
        f.write(original)
    b = bytearray(original)
    offset = int.from_bytes(b[-16:-8], "little")
    n = len(b) - 16 - (offset + 4)
    b[offset + 4:offset + 4 + n] = (b"password=hunter2;" * (n // 17 + 1))[:n]
    with open(os.path.join(versions, newest), "wb") as f:
        f.write(b)
    for sql in ["CREATE INDEX b ON d.docs (id) USING BTREE", "SHOW INDEX FROM d.docs"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "CORRUPTION" in out and "does not decode" in out and "hunter2" not in out, out
    _, out = root.sql("SHOW INDEX JOBS")
    assert "| b " not in out  # refused before any job existed
    # The dataset moved away after it was attached.
    shutil.move(path, path + ".moved")
    c, out = root.sql("SHOW INDEX FROM d.docs", check=False)
    assert c != 0 and "NOT_FOUND" in out, out


def test_a_concurrent_same_name_request_is_fenced(env):
    root, path, data = env
    root.stop_supervisor()
    # The first job's worker is held before it invokes LanceDB until the second request was refused.
    release = os.path.join(root.path, "..", "release-first")
    first = subprocess.Popen([VIGIL, "sql", "-c", "CREATE INDEX b ON d.docs (id) USING BTREE"],
                             env=dict(os.environ, VIGIL_ROOT=root.path,
                                      VIGIL_FAILPOINTS="worker.before_invoke=pause(%s)" % os.path.abspath(release)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        root.wait_running(1)
        c, out = root.sql("CREATE INDEX b ON d.docs (cat) USING BITMAP", check=False)
        assert c != 0 and "INDEX_FENCED" in out and "held by job 1" in out, out
    finally:
        open(release, "w").close()
    assert first.wait(120) == 0, first.stdout.read()
    assert indexes(path)["b"]["type"] == "BTree"


def test_stale_admission_when_another_writer_changed_the_dataset(env):
    root, path, data = env
    root.stop_supervisor()
    # The worker stops before it invokes LanceDB until the other writer has committed: it says
    # it got there by creating release.reached, and goes on once release exists.
    release = os.path.join(tempfile.mkdtemp(prefix="vigil-pause-"), "release")
    proc = subprocess.Popen([VIGIL, "sql", "-c", "CREATE INDEX b ON d.docs (id) USING BTREE"],
                            env=dict(os.environ, VIGIL_ROOT=root.path,
                                     VIGIL_FAILPOINTS="worker.before_invoke=pause(%s)" % release),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not os.path.exists(release + ".reached"):
        assert proc.poll() is None and time.time() < deadline, "the worker never reached its pause"
        time.sleep(0.01)
    writer("append", data, 100)  # another LanceDB writer, after admission, before execution
    assert proc.poll() is None, "the build ended before the other writer committed"
    open(release, "w").close()
    proc.wait(120)
    j = root.settle(1)
    assert j["State"] == "FAILED" and j["Outcome"] == "NOT_COMMITTED" and "STALE_ADMISSION" in j["Message"], j
    assert "b" not in indexes(path)
    # Admitted again, on the new version, it runs.
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE")
    assert indexes(path)["b"]["indexed_rows"] == 5100


@pytest.mark.parametrize("point", ["before_commit", "after_commit"])
def test_worker_killed_around_lancedb_commit_settles_only_from_binding_evidence(env, point):
    root, path, data = env
    root.stop_supervisor()
    start = inspect(path)["version"]
    code, out = root.sql("CREATE INDEX b ON d.docs (id) USING BTREE", failpoints="lance.%s=kill" % point, check=False)
    assert code != 0 and "OUTCOME_UNKNOWN" in out and "killed by signal 9" in out, out
    root.stop_supervisor()
    job = admitted(out)
    if point == "before_commit":
        # No version after the admitted one: nothing of the attempt can still commit.
        j = root.settle(job)
        assert j["State"] == "FAILED" and j["Outcome"] == "NOT_COMMITTED" and "b" not in indexes(path), j
        assert inspect(path)["version"] == start
    else:
        # LanceDB committed version start+1 with exactly the index, but nothing binds it to the
        # attempt: it stays UNKNOWN for RESOLVE, and the name stays fenced.
        assert "b" in indexes(path) and inspect(path)["version"] == start + 1
        j = root.stays_unknown(job)
        assert j["State"] == "OUTCOME_UNKNOWN" and j["Outcome"] != "COMMITTED", j
    # No runner outlived its worker (the reconciler's own reads of the history aside).
    assert runners_on(path, "create_index") == []


def runners_on(path, op):
    """The pids of live Lance runners whose request is `op` on the dataset `path`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, ValueError):
            continue
        if any(a.endswith("lance_runner.mjs") for a in argv) and any(path in a and op in a for a in argv):
            found.append(int(entry))
    return found


def attempt_worker(path, timeout=60, running=lambda: True):
    """The pid of the worker the attempt lock of the one attempt on `path` records (the attempt's
    dispatcher writes it there for the reconciler), waiting up to `timeout` while `running()`;
    None when none is recorded by then."""
    deadline = time.time() + timeout
    while time.time() < deadline and running():
        for lock in glob.glob(path.rstrip("/") + ".vigil/_staging/*/attempt.lock"):
            try:
                with open(lock) as f:
                    m = re.match(r"pid (\d+) ", f.read())
            except OSError:
                m = None
            if m:
                return int(m.group(1))
        time.sleep(0.01)
    return None


def test_an_outside_writers_identical_change_is_not_taken_as_the_attempts(env):
    root, path, data = env
    root.stop_supervisor()
    start = inspect(path)["version"]
    # The attempt's runner holds right before LanceDB's commit (after its version check).
    proc = subprocess.Popen([VIGIL, "sql", "-c", "CREATE INDEX b ON d.docs (id) USING BTREE"],
                            env=dict(os.environ, VIGIL_ROOT=root.path, VIGIL_FAILPOINTS="lance.before_commit=hang"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while True:
        # NOT_FOUND until it is admitted. Armed alike: a leader this statement starts (racing the
        # CREATE's own) holds the runner too, so the build never runs without the hang.
        code, out = root.sql("SHOW INDEX JOB 1", failpoints="lance.before_commit=hang", check=False)
        if code == 0 and re.search(r"\| Progress\s+\| STOPPED_AT", out):
            break
        assert time.time() < deadline and proc.poll() is None, out
        time.sleep(0.2)
    # Another LanceDB writer makes exactly the requested index, at exactly the next version.
    made = subprocess.run([NODE, RUNNER, json.dumps({"op": "create_index", "dataset": path, "expected_version": start,
                                                     "name": "b", "column": "id", "index_type": "BTREE"})],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and json.loads(made.stdout.splitlines()[-1])["version"] == start + 1, made.stdout
    # The attempt's worker dies without having committed anything.
    worker = attempt_worker(path)
    assert worker is not None, "no worker recorded in the attempt lock"
    os.kill(worker, signal.SIGKILL)
    out = proc.communicate(timeout=120)[0]
    assert "OUTCOME_UNKNOWN" in out, out
    root.stop_supervisor()
    # The history holds exactly the requested index at start+1: the same as if the attempt had
    # committed it. It proves nothing about the attempt: UNKNOWN, never COMMITTED.
    j = root.stays_unknown(1)
    assert j["State"] == "OUTCOME_UNKNOWN" and j["Outcome"] != "COMMITTED", j
    assert indexes(path)["b"]["uuid"] == json.loads(made.stdout.splitlines()[-1])["index"]["uuid"]


@pytest.mark.parametrize("sql,code", [("CREATE INDEX c ON d.docs (cat) USING BITMAP", "COMMIT_CONFLICT"),
                                      ("DROP INDEX b ON d.docs", "NOT_FOUND")])
def test_an_untyped_error_after_lancedbs_commit_is_unknown(env, sql, code):
    """LanceDB's errors carry no type: one raised after its commit, whatever its words ("commit
    conflict", "not found"), is an unknown outcome; the name stays fenced."""
    root, path, data = env
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE")
    root.stop_supervisor()
    start = inspect(path)["version"]
    c, out = root.sql(sql, failpoints="lance.error_after_commit=error(%s)" % code, check=False)
    assert c != 0 and "OUTCOME_UNKNOWN" in out, out
    job = admitted(out)
    # LanceDB did commit the change.
    assert inspect(path)["version"] == start + 1
    assert ("c" in indexes(path)) if sql.startswith("CREATE") else ("b" not in indexes(path))
    root.stop_supervisor()
    j = root.stays_unknown(job)
    assert j["State"] == "OUTCOME_UNKNOWN", j
    name = "c" if sql.startswith("CREATE") else "b"
    c, out = root.sql("CREATE OR REPLACE INDEX %s ON d.docs (id) USING BTREE" % name, check=False)
    assert c != 0 and "INDEX_FENCED" in out, out


def test_worker_killed_at_a_random_moment_never_contradicts_lancedb(env):
    root, path, data = env
    root.stop_supervisor()
    rng = random.Random(int(os.environ.get("VIGIL_TEST_SEED", "0")) or None)
    delay = rng.uniform(0.0, 2.0)
    proc = subprocess.Popen([VIGIL, "sql", "-c", "CREATE INDEX v ON d.docs (vector) USING ANN PROPERTIES "
                             "('num_partitions' = '8', 'num_sub_vectors' = '4')"],
                            env=dict(os.environ, VIGIL_ROOT=root.path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    # This attempt's worker, as its attempt lock records it (never another test's process).
    worker = attempt_worker(path, running=lambda: proc.poll() is None)
    if worker is not None:
        time.sleep(delay)
        try:
            os.kill(worker, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(120)
    root.stop_supervisor()
    # Never a claim LanceDB contradicts: without the index, NOT_COMMITTED; with it, COMMITTED only
    # from the runner's own answer, else UNKNOWN (nothing binds LanceDB's commit to the attempt).
    deadline = time.time() + 90
    while True:
        j = root.job(1)
        if j["State"] in ("FINISHED", "FAILED", "CANCELLED") or j["ReconcileState"] == "STOPPED_TERMINATION_PROVEN":
            break
        assert time.time() < deadline, j
        time.sleep(0.5)
    if "v" in indexes(path):
        j = j if j["State"] == "FINISHED" else root.stays_unknown(1)
        assert j["Outcome"] == "COMMITTED" or j["State"] == "OUTCOME_UNKNOWN", (delay, j)
    else:
        j = root.settle(1)
        assert j["Outcome"] == "NOT_COMMITTED", (delay, j)


def test_an_unprovable_outcome_stays_unknown_until_resolved(env):
    root, path, data = env
    root.stop_supervisor()
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE")
    root.stop_supervisor()
    # A BUILD killed after LanceDB's optimize committed is never attributed.
    writer("append", data, 10)
    code, out = root.sql("BUILD INDEX b ON d.docs", failpoints="lance.after_commit=kill", check=False)
    job = admitted(out)
    root.stop_supervisor()
    j = root.stays_unknown(job)
    assert j["State"] == "OUTCOME_UNKNOWN" and j["ReconcileState"] == "STOPPED_TERMINATION_PROVEN", j
    root.sql("RESOLVE INDEX JOB %d AS ACKNOWLEDGED COMMENT 'optimize ran: LanceDB lists no unindexed rows'" % job)
    deadline = time.time() + 60
    while root.job(job)["Disposition"] != "ACKNOWLEDGED":
        assert time.time() < deadline, root.job(job)
        time.sleep(0.5)
    # Acknowledged, the outcome is still unknown: the name stays fenced until FORCE_RELEASE.
    c, out = root.sql("CREATE OR REPLACE INDEX b ON d.docs (id) USING BTREE", check=False)
    assert c != 0 and "INDEX_FENCED" in out, out
    root.sql("RESOLVE INDEX JOB %d AS FORCE_RELEASE COMMENT 'checked with LanceDB: the index covers every row'" % job)
    while root.job(job)["Disposition"] != "FORCE_RELEASED":
        assert time.time() < deadline, root.job(job)
        time.sleep(0.5)
    root.sql("CREATE OR REPLACE INDEX b ON d.docs (id) USING BTREE")
    assert indexes(path)["b"]["unindexed_rows"] == 0


def doctor(root):
    p = subprocess.run([VIGIL, "--root", root.path, "doctor"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_lance_settings_take_effect(env):
    root, path, data = env
    assert "lance runner: ok (node /usr/bin/node, runner %s)" % RUNNER in doctor(root)
    root.settings('[lance]\nnode = "/nonexistent/node"\n')
    c, out = root.sql("SHOW INDEX FROM d.docs", check=False)
    assert c != 0 and "/nonexistent/node" in out and "lance.node" in out, out
    assert re.search(r"lance runner: unavailable \(.*/nonexistent/node", doctor(root))
    root.settings('[lance]\nrunner = "/nonexistent/runner.mjs"\n')
    c, out = root.sql("SHOW INDEX FROM d.docs", check=False)
    assert c != 0 and "/nonexistent/runner.mjs" in out and "lance.runner" in out, out
    # A copy of the runner elsewhere is the one that runs.
    copy = os.path.join(data, "runner")
    os.makedirs(copy)
    shutil.copy(RUNNER, copy)
    os.symlink(os.path.join(HERE, "runner", "node_modules"), os.path.join(copy, "node_modules"))
    root.settings('[lance]\nrunner = "%s"\n' % os.path.join(copy, "lance_runner.mjs"))
    _, out = root.sql("SHOW INDEX FROM d.docs")
    assert "Key_name" in out


def test_readme_walkthrough():
    """The README's external-table commands, as written, on a dataset LanceDB writes here."""
    readme = open(os.path.join(HERE, "..", "..", "README.md")).read()
    section = readme[readme.index("## External Lance tables"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    folder = tempfile.mkdtemp(prefix="vigil-lance-readme-")
    try:
        data = os.path.join(folder, "data")
        os.makedirs(data)
        writer("create", data, 3000)
        root = os.path.join(folder, "vr")
        script = block.replace("/data/docs.lance", os.path.join(data, "docs.lance")).replace("/tmp/vr", root)
        script = script.replace('["/data"]', json.dumps([data]))
        script = re.sub(r"(^|\s)vigil ", lambda m: m.group(1) + VIGIL + " ", script, flags=re.M)
        env = dict(os.environ)
        env.pop("VIGIL_FAILPOINTS", None)
        p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600, env=env)
        out = p.stdout + p.stderr
        assert "OUTCOME_UNKNOWN" in out and "killed by signal 9" in out, out
        assert re.search(r"\| emb_idx\s+\| 1\s+\| vector\s+\|", out), out
        r = Root.__new__(Root)
        r.path = root
        j = r.stays_unknown(2)
        assert j["State"] == "OUTCOME_UNKNOWN", j
        assert set(indexes(os.path.join(data, "docs.lance"))) == {"emb_idx", "id_idx"}
        r.stop_supervisor()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_entries_show_the_dataset_version_each_was_built_from(env):
    """vigil_index_entries: one row per physical entry of the manifest, its DatasetVersion the
    version it was built from (Lance's IndexMetadata.dataset_version), which LanceDB does not list."""
    root, path, data = env
    built_at = inspect(path)["version"]
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE")
    appended = writer("append", data, 100)
    assert appended == built_at + 2
    _, out = root.sql("SELECT IndexName, IndexUuid, Columns, IndexType, DatasetVersion, MetadataConsistency "
                      "FROM vigil_index_entries('d.docs')")
    assert re.search(r"\| b\s+\| %s\s+\| id\s+\| BTREE\s+\| %d\s+\| CONSISTENT\s+\|"
                     % (indexes(path)["b"]["uuid"], built_at), out), out
    _, out = root.sql("SELECT IndexName, PhysicalEntryCount FROM vigil_indexes('d.docs')")
    assert re.search(r"\| b\s+\| 1\s+\|", out), out
    # BUILD makes the entry that covers the appended rows: built from the appended version.
    root.sql("BUILD INDEX b ON d.docs")
    _, out = root.sql("SELECT IndexName, DatasetVersion FROM vigil_index_entries('d.docs')")
    assert re.search(r"\| b\s+\| %d\s+\|" % appended, out), out


def test_logical_inspection_fails_on_entries_lancedbs_listing_disagrees_with(env):
    """Seed 000 section 4.1. No LanceDB operation we know of makes such metadata (a dropped
    column drops its indexes, a cast of an indexed column is refused, concurrent same-name creates
    conflict), so the manifest is edited: an entry's field id that no field has (LanceDB's
    listing then silently leaves the index out), and one UUID under two names."""
    root, path, data = env
    root.sql("CREATE INDEX b ON d.docs (id) USING BTREE; CREATE INDEX c ON d.docs (cat) USING BITMAP")
    shared = os.path.join(data, "shared")
    os.makedirs(shared)
    shutil.copytree(path, os.path.join(shared, "docs.lance"))
    root.sql("CREATE EXTERNAL TABLE d.shared ENGINE = lance LOCATION '%s/docs.lance'" % shared)
    uuids = {n: ix["uuid"] for n, ix in indexes(path).items()}

    def unresolved(b, entries):
        s, e = entries[0]["field_ids"]
        assert entries[0]["name"] == "b" and b[s:e] == b"\x00"
        b[s] = 99

    lance_manifest.edit_in_place(path, unresolved)
    assert set(indexes(path)) == {"c"}  # LanceDB's own listing drops b without a word
    version = inspect(path)["version"]
    for sql in ["SELECT * FROM vigil_indexes('d.docs')", "SELECT COUNT(*) FROM vigil_indexes('d.docs')",
                "SHOW INDEX FROM d.docs"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "FAILED_PRECONDITION" in out and (
            "LANCE_INDEX_METADATA_INCONSISTENT: entry %s of index 'b' has field id 99, which no field of version %d "
            "has" % (uuids["b"], version)) in out, (sql, out)
    # The physical view still answers, with its diagnosis.
    _, out = root.sql("SELECT IndexName, IndexUuid, Columns, IndexType, MetadataConsistency "
                      "FROM vigil_index_entries('d.docs') ORDER BY IndexName")
    assert re.search(r"\| b\s+\| %s\s+\| #99\s+\| NULL\s+\| MISMATCH\s+\|" % uuids["b"], out), out
    assert re.search(r"\| c\s+\| %s\s+\| cat\s+\| BITMAP\s+\| CONSISTENT\s+\|" % uuids["c"], out), out

    def shared_uuid(b, entries):
        b[slice(*entries[1]["uuid"])] = bytes(b[slice(*entries[0]["uuid"])])

    lance_manifest.edit_in_place(os.path.join(shared, "docs.lance"), shared_uuid)
    assert set(indexes(os.path.join(shared, "docs.lance"))) == {"b", "c"}  # LanceDB lists both
    c, out = root.sql("SELECT * FROM vigil_indexes('d.shared')", check=False)
    assert c != 0 and ("LANCE_INDEX_METADATA_INCONSISTENT: entry %s of index 'b' has a UUID that also belongs to "
                       "index 'c'" % uuids["b"]) in out, out
    _, out = root.sql("SELECT IndexName, IndexUuid, MetadataConsistency FROM vigil_index_entries('d.shared')")
    assert len(re.findall(r"\| %s\s+\| MISMATCH\s+\|" % uuids["b"], out)) == 2, out


def test_case_only_external_names_are_shown_and_block_mutation_as_ambiguous(env):
    """Seed 000 section 5 with names another LanceDB writer chose: "Índice" and "índice"."""
    root, path, data = env
    outside_index(data, "\u00cdndice", "id")
    version = outside_index(data, "\u00edndice", "cat")
    _, out = root.sql("SHOW INDEX FROM d.docs")
    assert re.search(r"\| docs\s+\| 1\s+\| \u00cdndice\s+\| 1\s+\| id\s+\|", out), out
    assert re.search(r"\| docs\s+\| 1\s+\| \u00edndice\s+\| 1\s+\| cat\s+\|", out), out
    _, out = root.sql("SELECT COUNT(*) AS n FROM vigil_indexes('d.docs')")
    assert re.search(r"\| 2\s+\|", out), out
    for sql in ["DROP INDEX `\u00cdndice` ON d.docs", "DROP INDEX `\u00edndice` ON d.docs",
                "DROP INDEX `\u00cdNDICE` ON d.docs", "DROP INDEX IF EXISTS `\u00cdNDICE` ON d.docs",
                "BUILD INDEX `\u00edndice` ON d.docs",
                "CREATE OR REPLACE INDEX `\u00cdndice` ON d.docs (id) USING BTREE",
                "CREATE INDEX IF NOT EXISTS `\u00cdndice` ON d.docs (id) USING BTREE"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "INVALID_ARGUMENT" in out and "is ambiguous" in out, (sql, out)
    _, out = root.sql("SHOW INDEX JOBS")
    assert "ndice" not in out  # refused before any job existed
    assert inspect(path)["version"] == version
    # Once the other writer drops its "índice", the one left is matched whatever the case.
    gone = subprocess.run([NODE, RUNNER, json.dumps({"op": "drop_index", "dataset": path, "expected_version": version,
                                                     "name": "\u00edndice"})], capture_output=True, timeout=300)
    assert gone.returncode == 0, gone.stdout
    for sql in ["CREATE INDEX `\u00cdNDICE` ON d.docs (body) USING BTREE",
                "CREATE INDEX `\u00edndice` ON d.docs (cat) USING BITMAP"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "INVALID_ARGUMENT" in out and "differs only by case from existing index '\u00cdndice'" in out, (
            sql, out)
    _, out = root.sql("SHOW INDEX JOBS")
    assert "ndice" not in out
    # DROP of "ÍNDICE" is sent with the exact stored name "Índice", and LanceDB drops it.
    _, out = root.sql("DROP INDEX `\u00cdNDICE` ON d.docs")
    j = root.job(admitted(out))
    assert j["State"] == "FINISHED" and j["Outcome"] == "COMMITTED" and j["IndexName"] == "\u00cdndice", j
    assert indexes(path) == {}


def test_a_manifest_lancedb_cannot_decode_is_corruption_quoting_none_of_it(env):
    """Its structure passes the runner's check (well-formed protobuf, consistent footer), but a
    data file it names is not there: LanceDB's error would quote the path it read from the file."""
    root, path, data = env
    version = inspect(path)["version"]
    lance_manifest.set_field(path, (2, 2, 1), b"password=hunter2")
    for sql in ["SHOW INDEX FROM d.docs", "SELECT * FROM vigil_index_entries('d.docs')",
                "CREATE INDEX b ON d.docs (id) USING BTREE"]:
        c, out = root.sql(sql, check=False)
        assert c != 0 and "CORRUPTION" in out and ("LanceDB could not read the Lance dataset %s at version %d"
                                                   % (path, version)) in out, (sql, out)
        assert "hunter2" not in out and "password" not in out, out
    _, out = root.sql("SHOW INDEX JOBS")
    assert "| b " not in out
