"""Indexes as jobs and searches from Python, checked against the SQL surface."""
import re

import numpy as np
import pytest

import vigil

DIM = 16


@pytest.fixture
def docs(db):
    rng = np.random.default_rng(3)
    n = 3000
    return db.create_table("docs", {
        "id": np.arange(n),
        "cat": np.array(["news" if i % 3 == 0 else "sport" for i in range(n)], dtype=object),
        "body": [f"word{i % 7} common text {i}" for i in range(n)],
        "emb": rng.random((n, DIM), dtype=np.float32),
    })


def test_a_vector_search_returns_exactly_what_sql_returns(db, docs):
    job = docs.create_index("emb", num_partitions=16, num_sub_vectors=4, wait=True)
    assert (job.state, job.outcome) == ("FINISHED", "COMMITTED")
    q = np.random.default_rng(5).random(DIM)
    got = docs.search(q).nprobes(4).refine_factor(2).limit(7).to_list()
    literal = "[" + ", ".join(repr(float(x)) for x in q.astype(np.float32)) + "]"
    sql = db.sql("SELECT id, _distance FROM vector_search('default.docs', 'emb', '" + literal +
                 "', 7, '{\"nprobes\": 4, \"refine_factor\": 2}')").rows
    assert [(r["id"], r["_distance"]) for r in got] == sql
    assert len(got) == 7 and isinstance(got[0]["emb"], np.ndarray) and got[0]["emb"].shape == (DIM,)
    arr = docs.search(q).nprobes(4).refine_factor(2).limit(7).to_numpy()
    assert list(arr["id"]) == [r[0] for r in sql] and arr["emb"].shape == (7, DIM)
    assert "IVF_PQ emb_idx" in docs.search(q).limit(3).explain()


def test_prefilter_and_postfilter(docs):
    q = np.full(DIM, 0.5)
    pre = docs.search(q).where("cat = 'news'").select(["id", "cat"]).limit(10).to_list()
    assert len(pre) == 10 and {r["cat"] for r in pre} == {"news"}
    post = docs.search(q).where("cat = 'news'", prefilter=False).select(["id", "cat"]).limit(10).to_list()
    assert {r["cat"] for r in post} <= {"news"} and len(post) <= 10
    top = {r["id"] for r in docs.search(q).select(["id"]).limit(10).to_list()}
    assert {r["id"] for r in post} == {i for i in top if i % 3 == 0}


def test_query_vector_errors(docs):
    for bad, shape in ((np.ones(DIM + 1), f"({DIM + 1},)"), (np.ones((2, DIM)), f"(2, {DIM})")):
        with pytest.raises(vigil.InvalidArgumentError, match=f"must be {DIM} numbers.*shape {re.escape(shape)}"):
            docs.search(bad)
    with pytest.raises(vigil.InvalidArgumentError, match="non-finite"):
        docs.search(np.full(DIM, np.nan))
    with pytest.raises(vigil.InvalidArgumentError, match="limit must be a positive integer"):
        docs.search(np.ones(DIM)).limit(0)
    with pytest.raises(vigil.InvalidArgumentError, match="has no vector column 'cat'"):
        docs.search(np.ones(DIM), vector_column="cat")


def test_searches_of_different_shapes_on_one_table_each_get_their_own_select(docs):
    q = np.full(DIM, 0.25)
    shapes = [(3, None, ["id"]), (5, None, ["id"]), (3, "cat = 'news'", ["id", "cat"]), (4, None, None), (3, None, ["id"])]
    for k, where, columns in shapes * 2:  # the second pass reuses each shape's SELECT text
        s = docs.search(q).limit(k)
        if where:
            s = s.where(where)
        if columns:
            s = s.select(columns)
        got = s.to_list()
        assert len(got) == k
        assert set(got[0]) == set((columns or ["id", "cat", "body", "emb"]) + ["_distance"])
        if where:
            assert {r["cat"] for r in got} == {"news"}


def test_full_text_and_scalar_indexes(db, docs):
    docs.create_fts_index("body", wait=True)
    hits = docs.search("word3").select(["id", "body"]).limit(5).to_list()
    assert len(hits) == 5 and all("word3" in h["body"] for h in hits)
    sql = db.sql("SELECT id, body, _score FROM fts_search('default.docs', 'body', 'word3', 5)").rows
    assert [(h["id"], h["body"], h["_score"]) for h in hits] == sql
    assert docs.create_scalar_index("cat", index_type="BITMAP", wait=True).state == "FINISHED"
    assert docs.create_scalar_index("id", wait=True).state == "FINISHED"
    names = {i["name"]: i["index_type"] for i in docs.list_indices()}
    assert names == {"body_idx": "FTS", "cat_idx": "BITMAP", "id_idx": "BTREE"}
    with pytest.raises(vigil.InvalidArgumentError, match="BTREE or BITMAP"):
        docs.create_scalar_index("id", index_type="HASH")


def test_replace_build_optimize_stats_and_drop(docs):
    docs.create_scalar_index("id", wait=True)
    with pytest.raises(vigil.AlreadyExistsError):
        docs.create_scalar_index("id")
    replaced = docs.create_scalar_index("id", replace=True, wait=True)
    assert replaced.record["Operation"] == "REPLACE" and replaced.state == "FINISHED"
    docs.add({"id": np.arange(3000, 3100), "cat": ["x"] * 100, "body": ["b"] * 100,
              "emb": np.zeros((100, DIM), dtype=np.float32)})
    assert docs.index_stats("id_idx")["num_unindexed_rows"] == 100
    jobs = docs.optimize()
    assert [j.record["Operation"] for j in jobs] == ["BUILD"]
    assert docs.index_stats("id_idx")["num_unindexed_rows"] == 0
    assert docs.drop_index("id_idx", wait=True).state == "FINISHED"
    assert docs.list_indices() == [] and docs.index_stats("id_idx") is None


def test_wait_for_index_and_a_job_by_id(db, docs):
    job = docs.create_scalar_index("id")
    docs.wait_for_index(["id_idx"], timeout=120)
    assert db.job(job.id).state == "FINISHED"
    assert any(" ADMITTED " in e for e in db.job(job.id).events)


def test_cancel_a_pending_job_and_resolve_refused_for_a_settled_one(root):
    db = vigil.connect(root, start_leader=False)  # no leader: the job stays PENDING
    t = db.create_table("t", {"id": np.arange(10)})
    job = t.create_scalar_index("id")
    assert job.state == "PENDING"
    assert job.cancel().state == "CANCELLED"
    with pytest.raises(vigil.FailedPreconditionError):
        job.resolve("ACKNOWLEDGED", "checked")
    with pytest.raises(vigil.InvalidArgumentError, match="ACKNOWLEDGED or FORCE_RELEASE"):
        job.resolve("MAYBE", "x")
    with pytest.raises(vigil.DeadlineExceededError, match="is PENDING after 0.2 s"):
        t.create_scalar_index("id", name="other").wait(timeout=0.2)
    assert issubclass(vigil.DeadlineExceededError, TimeoutError)


def test_a_worker_killed_after_its_commit_is_outcome_unknown_then_attributed(root, monkeypatch):
    # The leader this connection starts inherits the failpoint and hands it to its worker, which
    # dies after the provider committed and before it answers.
    monkeypatch.setenv("VIGIL_FAILPOINTS", "worker.after_provider=kill")
    db = vigil.connect(root)
    t = db.create_table("t", {"id": np.arange(500)})
    job = t.create_scalar_index("id", wait=True, timeout=120)
    assert job.message.startswith("UNKNOWN_OUTCOME:") and "killed by signal 9" in job.message
    assert any('"state":"OUTCOME_UNKNOWN"' in e for e in job.events)
    assert any(" TERMINATION_PROVEN " in e for e in job.events)
    assert (job.state, job.outcome) == ("FINISHED", "COMMITTED")  # the attempt's commit is in the catalog
    assert t.index_stats("id_idx")["num_indexed_rows"] == 500


def test_an_exact_search_is_numpys_nearest_neighbours(docs):
    q = np.random.default_rng(9).random(DIM).astype(np.float32)
    got = docs.search(q).bypass_vector_index().select(["id"]).limit(5).to_numpy()
    emb = docs.to_columns(["emb"])["emb"]
    distances = ((emb - q)**2).sum(axis=1)
    nearest = np.argsort(distances, kind="stable")[:5]
    assert list(got["id"]) == list(nearest)
    assert np.allclose(got["_distance"], distances[nearest], rtol=1e-5)
    assert '"use_index": false' in docs.search(q).bypass_vector_index().to_sql()


def test_wait_with_progress_prints_the_jobs_line(docs, capsys):
    job = docs.create_scalar_index("id")
    job.wait(timeout=120, progress=True)
    err = capsys.readouterr().err
    assert f"job {job.id}: FINISHED" in err and err.endswith("\n")
    assert repr(job) == f"Job(id={job.id}, state=FINISHED, outcome=COMMITTED)"


def test_search_results_keep_the_columns_types(db):
    n = 200
    t = db.create_table("typed", {"id": np.arange(n), "flag": np.arange(n) % 2 == 0,
                                  "day": np.arange(n).astype("datetime64[D]"),
                                  "at": (np.arange(n) * 1000).astype("datetime64[us]"),
                                  "v": np.arange(n * 2, dtype=np.float32).reshape(n, 2)})
    q = np.array([10.0, 11.0])
    arr = t.search(q).bypass_vector_index().limit(3).to_numpy()
    assert list(arr["id"]) == [5, 4, 6] or list(arr["id"]) == [5, 6, 4]
    assert arr["day"].dtype == np.dtype("datetime64[D]") and arr["at"].dtype == np.dtype("datetime64[us]")
    assert arr["flag"].dtype == np.bool_ and arr["v"].dtype == np.float32
    row = t.search(q).bypass_vector_index().limit(1).to_list()[0]
    assert row["day"] == np.datetime64("1970-01-06") and row["flag"] is False
    assert row["at"] == np.datetime64(5000, "us")


def test_a_jobs_state_flags_come_from_the_engine_and_wait_follows_them(root):
    db = vigil.connect(root, start_leader=False)  # no leader: the job stays PENDING
    t = db.create_table("t", {"id": np.arange(10)})
    job = t.create_scalar_index("id")
    assert job.state == "PENDING"
    # A pending job holds its name's fence and is neither final nor resolvable.
    assert (job.final, job.done, job.holds_fence, job.resolvable) == (False, False, True, False)
    with pytest.raises(vigil.DeadlineExceededError):
        job.wait(timeout=0.2)
    job.cancel()
    assert job.state == "CANCELLED"
    assert (job.final, job.done, job.holds_fence, job.resolvable) == (True, True, False, False)
    assert job.wait(timeout=5) is job  # done: returns at once
