"""The Lance runner (lance_runner.mjs) against datasets LanceDB itself writes.

Each operation is checked with LanceDB's own listing (the runner's `inspect`, which
reads `listIndices()` and `listVersions()`): CREATE, REPLACE and DROP of IVF_PQ, BTREE,
BITMAP and FTS indexes, BUILD (optimize) of appended rows with no version pruned, a
dataset changed by another writer after admission (STALE_ADMISSION, nothing written),
and refused requests: bad paths, names and properties, a missing and a corrupt dataset.
Also what `inspect` reads beside LanceDB's listing: the physical index entries of the
manifest (with the dataset version each was built from), and the null elements of a vector
column an IVF_PQ request names.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "lance_runner.mjs")
WRITER = os.path.join(HERE, "testdata", "lance_writer.mjs")
NODE = shutil.which("node")
sys.path.insert(0, os.path.join(HERE, "testdata"))
import lance_manifest  # noqa: E402

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


def writer(op, folder, rows, dim=16, variant=""):
    out = subprocess.run([NODE, WRITER, op, folder, "docs", str(rows), str(dim)] + ([variant] if variant else []),
                         capture_output=True, text=True, timeout=300, check=True)
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


def test_an_ivf_pq_check_counts_the_null_elements_of_its_column(dataset):
    """Seed 000 section 2.3 wants non-null elements; Lance's schema reads every vector element as
    nullable (it stores none of their nullability), so the data is counted."""
    path, version = dataset
    check = {"index_type": "IVF_PQ", "column": "vector", "properties": {}}
    vector = inspect(path)["fields"][3]
    assert vector["element_nullable"] is True and "null_elements" not in vector, vector  # counted only when asked
    vector = ok({"op": "inspect", "dataset": path, "check_index": check})["fields"][3]
    assert vector["element_nullable"] is True and vector["null_elements"] == 0, vector
    folder = tempfile.mkdtemp(prefix="vigil-lance-nulls-")
    try:
        writer("create", folder, 2000, 16, "nullelements")
        holed = os.path.join(folder, "docs.lance")
        vector = ok({"op": "inspect", "dataset": holed, "check_index": check})["fields"][3]
        assert vector["null_elements"] == 200, vector  # one in every tenth row
        # A create_index is refused before anything is built.
        message = refused({"op": "create_index", "dataset": holed, "expected_version": 1, "name": "v",
                           "column": "vector", "index_type": "IVF_PQ",
                           "properties": {"num_partitions": "2", "num_sub_vectors": "4"}}, "INVALID_ARGUMENT")
        assert message == ("USING IVF_PQ needs non-null Float16 or Float32 elements; Lance column 'vector' holds 200 "
                           "null elements at version 1"), message
        seen = inspect(holed)
        assert seen["version"] == 1 and seen["indexes"] == [] and seen["entries"] == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_entries_are_the_manifests_with_the_version_each_was_built_from(dataset):
    path, version = dataset
    made = ok({"op": "create_index", "dataset": path, "expected_version": version, "name": "id_idx", "column": "id",
               "index_type": "BTREE"})
    appended = writer("append", os.path.dirname(path), 300)
    seen = inspect(path)
    assert seen["version"] == appended == made["version"] + 1
    assert seen["entries"] == [{"name": "id_idx", "uuid": made["index"]["uuid"], "field_ids": [0], "columns": ["id"],
                                "dataset_version": version, "type_url": "/lance.table.BTreeIndexDetails"}]
    # BUILD (LanceDB's optimize) makes an entry that covers the appended rows.
    built = ok({"op": "optimize_index", "dataset": path, "expected_version": appended, "name": "id_idx"})
    [entry] = inspect(path)["entries"]
    assert entry["dataset_version"] == appended and entry["uuid"] == built["index"]["uuid"], entry


def test_entries_show_what_lancedbs_listing_hides(dataset):
    """LanceDB's listing silently leaves out an index whose field does not resolve, and lists one
    UUID under two names; the manifest's entries show both as they are."""
    path, version = dataset
    folder = os.path.dirname(path)
    subprocess.run([NODE, WRITER, "index", folder, "docs", "b", "id"], check=True, capture_output=True, timeout=300)
    subprocess.run([NODE, WRITER, "index", folder, "docs", "c", "cat"], check=True, capture_output=True, timeout=300)
    copy = os.path.join(tempfile.mkdtemp(prefix="vigil-lance-shared-"), "docs.lance")
    try:
        shutil.copytree(path, copy)

        def unresolved(b, entries):
            s, e = entries[0]["field_ids"]
            assert entries[0]["name"] == "b" and b[s:e] == b"\x00"
            b[s] = 99  # a field id no field has

        lance_manifest.edit_in_place(path, unresolved)
        seen = inspect(path)
        assert [i["name"] for i in seen["indexes"]] == ["c"]
        assert [(e["name"], e["field_ids"], e["columns"]) for e in seen["entries"]] == [("b", [99], [None]),
                                                                                        ("c", [1], ["cat"])]

        def shared(b, entries):
            b[slice(*entries[1]["uuid"])] = bytes(b[slice(*entries[0]["uuid"])])

        lance_manifest.edit_in_place(copy, shared)
        seen = inspect(copy)
        assert [i["name"] for i in seen["indexes"]] == ["b", "c"]
        assert seen["entries"][0]["uuid"] == seen["entries"][1]["uuid"]
    finally:
        shutil.rmtree(os.path.dirname(copy), ignore_errors=True)


def test_drop_and_optimize_take_an_existing_exact_name_outside_the_allowlist(dataset):
    """An outside writer may name an index "Índice": a drop names it exactly; new names stay in NAME."""
    path, version = dataset
    version = int(subprocess.run([NODE, WRITER, "index", os.path.dirname(path), "docs", "\u00cdndice", "id"],
                                 check=True, capture_output=True, text=True, timeout=300).stdout.split()[-1])
    for name in ["a/b", "a\\b", "x\u0001y", "x\u0085y", "", "\u00e9" * 513]:
        assert "name must be an existing index's name" in refused(
            {"op": "drop_index", "dataset": path, "expected_version": version, "name": name}, "INVALID_ARGUMENT")
        assert "name must be an existing index's name" in refused(
            {"op": "optimize_index", "dataset": path, "expected_version": version, "name": name}, "INVALID_ARGUMENT")
    assert "does not exist" in refused({"op": "drop_index", "dataset": path, "expected_version": version,
                                        "name": "\u00cdNDICE"}, "NOT_FOUND")
    assert "name must match" in refused({"op": "create_index", "dataset": path, "expected_version": version,
                                         "name": "\u00cdndice2", "column": "cat", "index_type": "BTREE"},
                                        "INVALID_ARGUMENT")
    assert [i["name"] for i in inspect(path)["indexes"]] == ["\u00cdndice"]
    dropped = ok({"op": "drop_index", "dataset": path, "expected_version": version, "name": "\u00cdndice"})
    assert dropped["version"] == version + 1 and inspect(path)["indexes"] == []


@pytest.mark.parametrize("numbers", [(2, 2, 1), (1, 5)])
def test_a_manifest_lancedb_cannot_decode_is_corruption_quoting_none_of_it(dataset, numbers):
    """Well-formed protobuf with a consistent footer (the structural check passes), but a data
    file's path or a field's type that is wrong: LanceDB's failure (whose text can quote the file,
    or is a panic) is CORRUPTION in fixed words naming the dataset and version."""
    path, version = dataset
    lance_manifest.set_field(path, numbers, b"password=hunter2")
    for request in [{"op": "inspect", "dataset": path},
                    {"op": "create_index", "dataset": path, "expected_version": version, "name": "ix",
                     "column": "id", "index_type": "BTREE"}]:
        message = refused(request, "CORRUPTION")
        assert message.startswith("LanceDB could not read the Lance dataset %s at version %d (" % (path, version))
        assert "hunter2" not in message and "password" not in message, message
