"""vigil.connect(url, token=...): the same API against a `vigil serve` server on loopback, checked
against an embedded connection to the server's own root."""
import numpy as np
import pytest

import vigil


def test_the_same_tables_indexes_and_searches_over_http(server):
    url, token, path = server
    db = vigil.connect(url, token=token)
    rng = np.random.default_rng(2)
    n = 1500
    data = {
        "id": np.arange(n),
        "flag": np.arange(n) % 2 == 0,
        "day": np.arange(n).astype("datetime64[D]"),
        "at": (np.arange(n) * 1_500_000).astype("datetime64[us]"),
        "name": [f"n{i}" if i % 5 else None for i in range(n)],
        "emb": rng.random((n, 8), dtype=np.float32),
    }
    t = db.create_table("docs", data)
    assert t.add([{"id": n, "flag": True, "day": np.datetime64("2024-02-03"), "at": np.datetime64(
        "2024-01-02T03:04:05.5", "us"), "name": "it's", "emb": [0.25] * 8}]) == 1
    assert t.count_rows() == n + 1 and t.count_rows("name IS NULL") == n // 5

    local = vigil.connect(path, create=False, start_leader=False).open_table("docs")
    over_http, embedded = t.to_columns(), local.to_columns()
    assert list(over_http) == list(embedded)
    for name in embedded:
        assert over_http[name].dtype == embedded[name].dtype, name
        assert [repr(x) for x in over_http[name]] == [repr(x) for x in embedded[name]], name

    job = t.create_index("emb", num_partitions=8, num_sub_vectors=4, wait=True, timeout=120)
    assert (job.state, job.outcome) == ("FINISHED", "COMMITTED")
    assert [i["name"] for i in t.list_indices()] == ["emb_idx"]
    assert t.index_stats("emb_idx")["num_indexed_rows"] == n + 1
    q = rng.random(8)
    remote_hits = t.search(q).nprobes(4).where("flag = 1").limit(5).to_list()
    local_hits = local.search(q).nprobes(4).where("flag = 1").limit(5).to_list()
    assert [(h["id"], h["_distance"]) for h in remote_hits] == [(h["id"], h["_distance"]) for h in local_hits]
    assert np.array_equal(remote_hits[0]["emb"], local_hits[0]["emb"])
    assert t.delete("id >= 1000") == 501 and local.count_rows() == 1000
    # The history over HTTP is the embedded one, its commit times to the millisecond.
    remote_versions, local_versions = t.list_versions(), local.list_versions()
    assert [v["operation"] for v in remote_versions][-1] == "DELETE"
    strip = [{k: v for k, v in x.items() if k != "timestamp"} for x in remote_versions]
    assert strip == [{k: v for k, v in x.items() if k != "timestamp"} for x in local_versions]
    for r, e in zip(remote_versions, local_versions):
        assert abs((r["timestamp"] - e["timestamp"]).total_seconds()) < 0.001
    assert t.version == local_versions[-1]["version"]


def test_errors_over_http_are_the_same_typed_exceptions(server):
    url, token, _ = server
    with pytest.raises(vigil.UnauthenticatedError):
        vigil.connect(url, token="vgl_wrong")
    with pytest.raises(vigil.InvalidArgumentError, match="needs token="):
        vigil.connect(url)
    db = vigil.connect(url, token=token)
    t = db.create_table("t", schema={"id": "BIGINT NOT NULL", "v": "VECTOR(FLOAT32, 2) NOT NULL"})
    with pytest.raises(vigil.InvalidArgumentError, match="shape"):
        t.add({"id": [1], "v": np.ones((1, 3))})
    with pytest.raises(vigil.NotFoundError):
        db.open_table("missing")
    t.create_scalar_index("id", wait=True, timeout=120)
    with pytest.raises(vigil.AlreadyExistsError):
        t.create_scalar_index("id")
    assert t.count_rows() == 0


def test_a_vector_reads_as_its_float32_elements_over_http_and_embedded(server):
    url, token, path = server
    db = vigil.connect(url, token=token)
    db.sql("CREATE DATABASE vd")
    db.sql("CREATE TABLE vd.vecs (id BIGINT NOT NULL, emb VECTOR(FLOAT32, 3), h VECTOR(FLOAT16, 2))")
    # 7.0385307e-26 is the one FLOAT32 whose shortest digits read through a double give its neighbour.
    emb = np.array([0.1, 7.0385307e-26, -2.5e20], dtype=np.float32)
    db.sql("INSERT INTO vd.vecs VALUES (1, '[0.1, 7.03853069e-26, -2.5e20]', '[1, 0.5]'), (2, NULL, NULL)")
    local = vigil.connect(path, create=False, start_leader=False)
    for conn in (db, local):
        rows = conn.sql("SELECT id, emb, h FROM vd.vecs ORDER BY id").rows
        assert isinstance(rows[0][1], np.ndarray) and rows[0][1].dtype == np.float32
        assert rows[0][1].tobytes() == emb.tobytes()
        assert rows[0][2].tolist() == [1.0, 0.5]
        assert rows[1][1:] == (None, None)
    assert db.open_table("vd.vecs").to_columns()["emb"][0].tobytes() == emb.tobytes()


def test_a_user_past_the_servers_rate_limit_gets_rate_limited_error_and_its_wait(rate_limited_server):
    import time
    url, token, _ = rate_limited_server
    db = vigil.connect(url, token=token)
    with pytest.raises(vigil.RateLimitedError) as refused:
        for _ in range(100):
            db.sql("SELECT 1")
    assert refused.value.code == "RATE_LIMITED"
    assert "requests_per_second_per_user" in refused.value.message
    assert refused.value.retry_after >= 1
    time.sleep(refused.value.retry_after + 0.1)
    assert db.sql("SELECT 1").to_list() == [{"1": 1}]


def test_a_filter_that_smuggles_a_statement_runs_nothing_over_http_or_embedded(server):
    url, token, path = server
    for db in (vigil.connect(url, token=token), vigil.connect(path, create=False, start_leader=False)):
        name = "inj_http" if db.remote else "inj_local"
        t = db.create_table(name, {"id": np.arange(5)})
        smuggled = f"id > 0; DROP TABLE default.{name}"
        with pytest.raises(vigil.InvalidArgumentError):
            t.count_rows(smuggled)
        with pytest.raises(vigil.InvalidArgumentError):
            t.delete(smuggled)
        with pytest.raises(vigil.InvalidArgumentError):
            db.sql(f"SELECT COUNT(*) FROM default.{name}; DROP TABLE default.{name}")
        assert name in db.table_names() and t.count_rows() == 5


def test_a_user_with_alter_on_a_database_creates_tables_over_http(server):
    url, token, _ = server
    admin = vigil.connect(url, token=token)
    admin.sql("CREATE DATABASE shop")
    bob = admin.sql("CREATE USER bob").rows[0][1]
    admin.sql("GRANT ALTER ON shop.* TO bob")
    t = vigil.connect(url, token=bob, database="shop").create_table("orders", {"id": np.arange(3)})
    assert t.count_rows() == 3


def test_a_url_scheme_is_read_in_any_case_and_an_unknown_one_is_refused(server, tmp_path, monkeypatch):
    url, token, _ = server
    db = vigil.connect(url.replace("http://", "HTTP://"), token=token)
    assert db.remote and db.sql("SELECT 6 * 7").rows == [(42,)]
    monkeypatch.chdir(tmp_path)
    for bad in ("ftp://example/root", "s3x://bucket/root"):
        with pytest.raises(vigil.InvalidArgumentError, match="neither a root directory nor a vigil serve URL"):
            vigil.connect(bad)
    assert list(tmp_path.iterdir()) == []


def test_a_jobs_state_flags_over_http_are_the_servers_and_the_engines(server):
    import json
    import urllib.request

    url, token, path = server
    db = vigil.connect(url, token=token)
    t = db.create_table("t", {"id": np.arange(100)})
    job = t.create_scalar_index("id", wait=True, timeout=120)
    assert job.state == "FINISHED"
    assert (job.final, job.done, job.holds_fence, job.resolvable) == (True, True, False, False)
    # The flags agree with the vocabulary the server publishes, and with the embedded engine's.
    request = urllib.request.Request(url + "/v1/config", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as r:
        vocabulary = json.load(r)["job_states"]
    assert job.state in vocabulary["final"] and job.state not in vocabulary["fence_holding"]
    assert vocabulary["resolvable"] == ["OUTCOME_UNKNOWN"]
    assert "OUTCOME_UNKNOWN" in vocabulary["final"] and "PENDING" not in vocabulary["final"]
    local = vigil.connect(path, create=False, start_leader=False).job(job.id)
    assert (local.final, local.done, local.holds_fence, local.resolvable) == (True, True, False, False)
    assert local.record == job.record and local.events == job.events
