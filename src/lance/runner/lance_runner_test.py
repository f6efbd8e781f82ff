"""The Lance runner (lance_runner.mjs) against datasets LanceDB itself writes.

Each operation is checked with LanceDB's own listing (the runner's `inspect`, which
reads `listIndices()` and `listVersions()`): CREATE, REPLACE and DROP of IVF_PQ, BTREE,
BITMAP and FTS indexes, BUILD (optimize) of appended rows with no version pruned, a
dataset changed by another writer after admission (STALE_ADMISSION, nothing written),
and refused requests: bad paths, names and properties, a missing and a corrupt dataset.
"""

import json
import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "lance_runner.mjs")
WRITER = os.path.join(HERE, "testdata", "lance_writer.mjs")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None or not os.path.isdir(os.path.join(HERE, "node_modules", "@lancedb", "lancedb")),
    reason="node or the pinned LanceDB package is not installed (scripts/install-deps.sh)")


def run(request):
    """(last JSON line, every line, exit code) of one runner request."""
    p = subprocess.run([NODE, RUNNER, json.dumps(request)], capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    assert lines, p.stderr
    return lines[-1], lines, p.returncode


def ok(request):
    last, lines, code = run(request)
    assert code == 0 and last["event"] == "result", last
    assert all(line["event"] == "progress" for line in lines[:-1]), lines
    return last


def refused(request, code):
    last, _, exit_code = run(request)
    assert exit_code == 1 and last["event"] == "error" and last["code"] == code, last
    return last["message"]


def writer(op, folder, rows, dim=16):
    out = subprocess.run([NODE, WRITER, op, folder, "docs", str(rows), str(dim)], capture_output=True, text=True,
                         timeout=300, check=True)
    return int(out.stdout.split()[-1])


@pytest.fixture()
def dataset():
    folder = tempfile.mkdtemp(prefix="vigil-lance-")
    version = writer("create", folder, 2000)
    yield os.path.join(folder, "docs.lance"), version
    shutil.rmtree(folder, ignore_errors=True)


def inspect(path):
    return ok({"op": "inspect", "dataset": path})


def test_inspect_reads_schema_version_history_and_indexes(dataset):
    path, version = dataset
    seen = inspect(path)
    assert seen["version"] == version == 1
    assert [f["name"] for f in seen["fields"]] == ["id", "cat", "body", "vector"]
    assert seen["fields"][3]["type"].startswith("FixedSizeList[16]")
    assert [f["nullable"] for f in seen["fields"]] == [False] * 4
    assert [v["version"] for v in seen["versions"]] == [1] and seen["versions"][0]["rows"] == 2000
    assert seen["indexes"] == []


def test_a_probe_never_writes_and_never_follows_a_link(dataset):
    path, version = dataset
    # A folder holding only the dataset (the writer's connect made its own `__manifest`).
    folder = tempfile.mkdtemp(prefix="vigil-lance-probe-")
    try:
        copy = os.path.join(folder, "docs.lance")
        shutil.copytree(path, copy)
        assert inspect(copy)["version"] == version
        # A failed probe of something that only looks like a dataset.
        os.makedirs(os.path.join(folder, "fake.lance", "_versions"))
        refused({"op": "inspect", "dataset": os.path.join(folder, "fake.lance")}, "NOT_FOUND")
        assert sorted(os.listdir(folder)) == ["docs.lance", "fake.lance"]  # no `__manifest`
        assert os.listdir(os.path.join(folder, "fake.lance")) == ["_versions"]
        # A link to a dataset, and a dataset whose `_versions` is a link, are refused unread.
        os.symlink(copy, os.path.join(folder, "link.lance"))
        assert "symbolic link" in refused({"op": "inspect", "dataset": os.path.join(folder, "link.lance")},
                                          "INVALID_ARGUMENT")
        os.makedirs(os.path.join(folder, "hollow.lance"))
        os.symlink(os.path.join(copy, "_versions"), os.path.join(folder, "hollow.lance", "_versions"))
        assert "symbolic link" in refused({"op": "inspect", "dataset": os.path.join(folder, "hollow.lance")},
                                          "INVALID_ARGUMENT")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("column,index_type,properties", [
    ("vector", "IVF_PQ", {"metric": "l2", "num_partitions": "4", "num_sub_vectors": "4"}),
    ("id", "BTREE", {}),
    ("cat", "BITMAP", {}),
    ("body", "FTS", {"with_position": "false"}),
])
def test_create_replace_and_drop_each_index_type(dataset, column, index_type, properties):
    path, version = dataset
    made = ok({"op": "create_index", "dataset": path, "expected_version": version, "name": "ix", "column": column,
               "index_type": index_type, "properties": properties})
    assert made["base_version"] == version and made["version"] == version + 1
    listed = inspect(path)["indexes"]
    assert [(i["name"], i["columns"], i["uuid"]) for i in listed] == [("ix", [column], made["index"]["uuid"])]
    assert listed[0]["indexed_rows"] == 2000 and listed[0]["unindexed_rows"] == 0
    # Same name without REPLACE: refused, nothing written.
    assert "REPLACE" in refused({"op": "create_index", "dataset": path, "expected_version": version + 1, "name": "ix",
                                 "column": column, "index_type": index_type, "properties": properties},
                                "ALREADY_EXISTS")
    replaced = ok({"op": "create_index", "dataset": path, "expected_version": version + 1, "name": "ix",
                   "column": column, "index_type": index_type, "properties": properties, "replace": True})
    assert replaced["index"]["uuid"] != made["index"]["uuid"] and replaced["version"] == version + 2
    assert [i["uuid"] for i in inspect(path)["indexes"]] == [replaced["index"]["uuid"]]
    dropped = ok({"op": "drop_index", "dataset": path, "expected_version": version + 2, "name": "ix"})
    assert dropped["index"] is None and inspect(path)["indexes"] == []
    assert inspect(path)["version"] == dropped["version"] == version + 3


def test_build_indexes_appended_rows_and_prunes_no_version(dataset):
    path, version = dataset
    made = ok({"op": "create_index", "dataset": path, "expected_version": version, "name": "id_idx", "column": "id",
               "index_type": "BTREE"})
    appended = writer("append", os.path.dirname(path), 300)
    assert inspect(path)["indexes"][0]["unindexed_rows"] == 300
    built = ok({"op": "optimize_index", "dataset": path, "expected_version": appended, "name": "id_idx"})
    assert built["index"]["unindexed_rows"] == 0 and built["index"]["indexed_rows"] == 2300
    history = [v["version"] for v in inspect(path)["versions"]]
    assert history[:3] == [1, made["version"], appended] and history[-1] == built["version"]


def test_a_dataset_changed_after_admission_is_stale_and_nothing_is_written(dataset):
    path, version = dataset
    moved = writer("append", os.path.dirname(path), 10)
    message = refused({"op": "create_index", "dataset": path, "expected_version": version, "name": "ix",
                       "column": "id", "index_type": "BTREE"}, "STALE_ADMISSION")
    assert "version %d, not the admitted version %d" % (moved, version) in message
    seen = inspect(path)
    assert seen["version"] == moved and seen["indexes"] == []


@pytest.mark.parametrize("change,words", [
    ({"dataset": "relative/docs.lance"}, "absolute path"),
    ({"dataset": "/tmp/../etc/docs.lance"}, "without .."),
    ({"dataset": "/tmp/docs"}, "<name>.lance"),
    ({"name": "bad name"}, "name must match"),
    ({"column": "id; drop"}, "column must match"),
    ({"index_type": "HNSW"}, "index_type must be one of"),
    ({"properties": {"nlist": "4"}}, "has no property 'nlist'"),
    ({"index_type": "IVF_PQ", "column": "vector", "properties": {"num_partitions": "0"}}, "num_partitions"),
    ({"index_type": "IVF_PQ", "column": "vector", "properties": {"num_bits": "4"}}, "'num_bits' must be one of 8"),
    ({"expected_version": 0}, "expected_version"),
    ({"op": "rm"}, "op must be"),
])
def test_bad_requests_are_refused_by_name_before_anything_is_read(dataset, change, words):
    path, version = dataset
    request = {"op": "create_index", "dataset": path, "expected_version": version, "name": "ix", "column": "id",
               "index_type": "BTREE"}
    request.update(change)
    assert words in refused(request, "INVALID_ARGUMENT")
    assert inspect(path)["indexes"] == []


def test_a_missing_and_a_corrupt_dataset_are_errors(dataset):
    path, version = dataset
    assert "no Lance dataset" in refused({"op": "inspect", "dataset": path.replace("docs", "nope")}, "NOT_FOUND")
    manifests = [m for m in os.listdir(os.path.join(path, "_versions")) if m.endswith(".manifest")]
    assert len(manifests) == 1, manifests
    with open(os.path.join(path, "_versions", manifests[0]), "r+b") as f:
        f.truncate(16)
    message = refused({"op": "inspect", "dataset": path}, "CORRUPTION")
    assert "the newest manifest of the Lance dataset %s (version 1) does not decode" % path in message, message


def test_a_manifest_whose_message_is_not_protobuf_is_corruption_quoting_none_of_it(dataset):
    """Footer and length prefix intact, the protobuf message overwritten with text: CORRUPTION from
    the manifest's own structure (LanceDB's error would be untyped, and could quote it)."""
    path, version = dataset
    manifest = os.path.join(path, "_versions", [m for m in os.listdir(os.path.join(path, "_versions"))
                                                if m.endswith(".manifest")][0])
    with open(manifest, "rb") as f:
        b = bytearray(f.read())
    offset = int.from_bytes(b[-16:-8], "little")
    n = len(b) - 16 - (offset + 4)
    b[offset + 4:offset + 4 + n] = (b"password=hunter2;" * (n // 17 + 1))[:n]
    with open(manifest, "wb") as f:
        f.write(b)
    message = refused({"op": "inspect", "dataset": path}, "CORRUPTION")
    assert "not well-formed protobuf" in message and "hunter2" not in message, message


@pytest.mark.parametrize("words", ["Retryable commit conflict for version 2", "Index not found", "corrupt file"])
def test_lancedbs_errors_are_untyped_whatever_their_words(dataset, words):
    path, version = dataset
    last, lines, code = run({"op": "create_index", "dataset": path, "expected_version": version, "name": "ix",
                             "column": "id", "index_type": "BTREE", "fail_after_commit": words})
    assert code == 1 and last["event"] == "error" and last["code"] == "INTERNAL", last
    assert any(line.get("phase") == "BUILDING" for line in lines), lines  # after the write was invoked
    assert [i["name"] for i in inspect(path)["indexes"]] == ["ix"]  # LanceDB did commit
