"""The vigil package's SQL surface on an embedded root."""
import os
import tempfile

import pytest

import vigil


@pytest.fixture
def db():
    with tempfile.TemporaryDirectory() as d:
        yield vigil.connect(os.path.join(d, "root"), start_leader=False)  # jobs stay PENDING


def test_rows_round_trip_with_their_types(db):
    db.sql("CREATE DATABASE d")
    db.sql("CREATE TABLE d.t (id INTEGER, name TEXT, score FLOAT64)")
    db.sql("INSERT INTO d.t VALUES (1, 'a', 0.5), (2, NULL, 1.5)")
    r = db.sql("SELECT id, name, score FROM d.t ORDER BY id")
    assert r.columns == ["id", "name", "score"]
    assert r.rows == [(1, "a", 0.5), (2, None, 1.5)]
    assert r.to_list()[0] == {"id": 1, "name": "a", "score": 0.5}


def test_a_bad_statement_raises_its_typed_error_and_changes_nothing(db):
    db.sql("CREATE DATABASE d")
    db.sql("CREATE TABLE d.t (id INTEGER)")
    with pytest.raises(vigil.InvalidArgumentError) as e:
        db.sql("SELEKT 1")
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(vigil.AlreadyExistsError):
        db.sql("CREATE TABLE d.t (id INTEGER)")
    with pytest.raises(vigil.NotFoundError):
        db.sql("SELECT * FROM d.missing")
    assert db.sql("SELECT count(*) FROM d.t").rows == [(0,)]


def test_connect_without_create_refuses_a_missing_root():
    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(vigil.Error):
            vigil.connect(os.path.join(d, "nothing"), create=False)


def test_a_second_connection_sees_the_first_ones_commits(db):
    db.sql("CREATE DATABASE d")
    db.sql("CREATE TABLE d.t (id INTEGER)")
    db.sql("INSERT INTO d.t VALUES (7)")
    other = vigil.connect(db.path, create=False)
    assert other.sql("SELECT id FROM d.t").rows == [(7,)]


def test_a_fenced_index_name_raises_fenced_error(db):
    db.sql("CREATE DATABASE d")
    db.sql("CREATE TABLE d.t (id INTEGER NOT NULL)")
    db.sql("INSERT INTO d.t VALUES (1), (2)")
    first = db.sql("CREATE INDEX i ON d.t (id) USING BTREE")
    assert len(first.jobs) == 1  # admitted; no leader runs it, so its fence holds
    with pytest.raises(vigil.FencedError) as e:
        db.sql("CREATE INDEX i ON d.t (id) USING BTREE")
    assert e.value.code == "INDEX_FENCED"
