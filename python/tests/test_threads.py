"""Threads: the GIL is released around engine calls, and searches run while the index is replaced."""
import threading

import numpy as np

import vigil


def test_python_threads_run_while_the_engine_works(db):
    n = 200_000
    t = db.create_table("t", {"id": np.arange(n), "v": np.ones((n, 32), dtype=np.float32)})
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    thread = threading.Thread(target=ticker)
    thread.start()
    during = 0
    try:
        # Each scan reads 25 MB with the GIL released; a few scans give the ticker's thread a
        # turn on a busy machine, and none would if the GIL were held.
        for _ in range(10):
            before = len(ticks)
            t.to_columns()
            during += len(ticks) - before
            if during > 0:
                break
    finally:
        stop.set()
        thread.join()
    assert during > 0


def test_searches_from_threads_while_another_replaces_the_index(db):
    rng = np.random.default_rng(11)
    n, dim = 4000, 16
    t = db.create_table("t", {"id": np.arange(n), "v": rng.random((n, dim), dtype=np.float32)})
    t.create_index("v", num_partitions=16, num_sub_vectors=4, wait=True)
    errors, counts = [], []
    done = threading.Event()

    def searcher(seed):
        local = np.random.default_rng(seed)
        searched = 0
        try:
            while not done.is_set() or searched < 20:
                got = t.search(local.random(dim)).nprobes(4).select(["id"]).limit(5).to_list()
                assert len(got) == 5 and all(0 <= r["id"] < n for r in got)
                searched += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        counts.append(searched)

    threads = [threading.Thread(target=searcher, args=(s,)) for s in (1, 2)]
    for th in threads:
        th.start()
    try:
        job = t.create_index("v", num_partitions=8, num_sub_vectors=4, replace=True, wait=True, timeout=120)
    finally:
        done.set()
        for th in threads:
            th.join()
    assert errors == []
    assert job.state == "FINISHED" and min(counts) >= 20
    assert '"num_partitions":8' in t.list_indices()[0]["properties"]
