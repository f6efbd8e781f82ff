"""The Python side of `vigil bench python` (bench/python_bench.cc): times the vigil package on a
root and writes its figures as one JSON object (to --out, or stdout).

    python_bench.py search --root R --table db.t --queries q.npy --k 10 --nprobes 20
        opens the root read-only (no leader), warms up, then times the serial loop
        t.search(q).nprobes(n).limit(k).select(["id"]).to_list() over every query of q.npy;
        then every query on one thread against every query on each of two threads at once.
    python_bench.py add --root R --table db.t --rows N --dim D --npy rows.npy
        generates N x D float32 rows, saves them to rows.npy (for the CLI import the
        benchmark compares with), creates the table and times t.add() alone.

Peak RSS is VmHWM of this process (its own address space since exec), not getrusage's
ru_maxrss, which also counts the forking parent's resident pages.
"""

import argparse
import json
import resource
import sys
import threading
import time

import numpy as np

import vigil


def _status_bytes(key):
    """A `key: N kB` line of /proc/self/status in bytes (0 when absent)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _percentile(values, p):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _memory():
    return {"peak_rss_bytes": _status_bytes("VmHWM"), "rss_bytes": _status_bytes("VmRSS"),
            "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def search(args):
    started = time.perf_counter()
    db = vigil.connect(args.root, create=False, start_leader=False)
    t = db.open_table(args.table)
    queries = np.load(args.queries)
    open_seconds = time.perf_counter() - started
    if queries.ndim != 2 or queries.dtype != np.float32:
        raise SystemExit(f"{args.queries}: expected a 2-D float32 array, got {queries.dtype} {queries.shape}")
    vectors = list(queries)
    k, nprobes = args.k, args.nprobes

    warmup = len(vectors) if args.warmup < 0 else min(args.warmup, len(vectors))
    for q in vectors[:warmup]:
        t.search(q).nprobes(nprobes).limit(k).select(["id"]).to_list()

    latencies = []
    cpu_start = _cpu_seconds()
    loop_start = time.perf_counter()
    for q in vectors:
        t0 = time.perf_counter()
        t.search(q).nprobes(nprobes).limit(k).select(["id"]).to_list()
        latencies.append(time.perf_counter() - t0)
    loop_seconds = time.perf_counter() - loop_start
    cpu_seconds = _cpu_seconds() - cpu_start

    ids = [[row["id"] for row in t.search(q).nprobes(nprobes).limit(k).select(["id"]).to_list()]
           for q in vectors[:args.check]]

    # Every query on one thread, then on each of two threads at once (one Connection: each thread
    # gets a session of its own, and the GIL is released inside the engine). Each thread first
    # opens its session and warms it up, so that the timed part is searching alone. 1.0 is
    # perfect parallelism on two cores, 2.0 none.
    def every_query():
        for q in vectors:
            t.search(q).nprobes(nprobes).limit(k).select(["id"]).to_list()

    t0 = time.perf_counter()
    every_query()
    one = time.perf_counter() - t0
    ready = threading.Barrier(3)

    def warm_then_search():
        for q in vectors[:warmup]:
            t.search(q).nprobes(nprobes).limit(k).select(["id"]).to_list()
        ready.wait()
        every_query()

    threads = [threading.Thread(target=warm_then_search) for _ in range(2)]
    for th in threads:
        th.start()
    ready.wait()
    t0 = time.perf_counter()
    for th in threads:
        th.join()
    two = time.perf_counter() - t0
    threads_json = {"one_thread_seconds": one, "two_threads_seconds": two,
                    "wall_ratio_two_over_one": two / one if one > 0 else 0.0}

    out = {"queries": len(vectors), "warmup": warmup, "k": k, "nprobes": nprobes, "open_seconds": open_seconds,
           "seconds": loop_seconds, "qps": len(vectors) / loop_seconds if loop_seconds > 0 else 0.0,
           "p50_us": _percentile(latencies, 0.5) * 1e6, "p99_us": _percentile(latencies, 0.99) * 1e6,
           "cpu_us_per_query": cpu_seconds / len(vectors) * 1e6 if vectors else 0.0, "ids": ids,
           "threads": threads_json}

    # The same SELECT through the extension's Session.select alone (the text built once, the
    # vector's bytes bound): the part of a search the package's Python code does not add.
    session = getattr(db, "_session", None)
    if callable(session):
        column = next(f.name for f in t.schema if f.kind.startswith("VECTOR"))
        options = json.dumps({"nprobes": nprobes})
        select = f"SELECT id, _distance FROM vector_search('{t.name}', '{column}', ?, {k}, '{options}')"
        raw = session()
        binding = []
        for q in vectors:
            blob = np.ascontiguousarray(q, dtype="<f4").tobytes()
            t0 = time.perf_counter()
            raw.select(select, [blob])
            binding.append(time.perf_counter() - t0)
        out["session_select_sql"] = select
        out["session_select_p50_us"] = _percentile(binding, 0.5) * 1e6
        out["session_select_qps"] = len(binding) / sum(binding) if binding else 0.0
    out.update(_memory())
    return out


def add(args):
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    emb = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    ids = np.arange(args.rows, dtype=np.int64)
    generate_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.save(args.npy, emb)
    save_seconds = time.perf_counter() - t0

    db = vigil.connect(args.root, create=True, start_leader=False)
    t = db.create_table(args.table, schema={"id": "BIGINT NOT NULL", "emb": f"VECTOR(FLOAT32, {args.dim}) NOT NULL"})
    rss_before = _status_bytes("VmRSS")
    cpu_start = _cpu_seconds()
    t0 = time.perf_counter()
    data = {"id": ids, "emb": emb}
    added = t.add(data) if args.batch_rows is None else t.add(data, batch_rows=args.batch_rows)
    seconds = time.perf_counter() - t0
    cpu_seconds = _cpu_seconds() - cpu_start
    rows = t.count_rows()
    if added != args.rows or rows != args.rows:
        raise SystemExit(f"add reported {added} rows and the table holds {rows}, not {args.rows}")
    out = {"rows": added, "dim": args.dim, "batch_rows": args.batch_rows or "default", "seconds": seconds,
           "rows_per_s": added / seconds if seconds > 0 else 0.0, "cpu_seconds": cpu_seconds,
           "mb_per_s": emb.nbytes / 1e6 / seconds if seconds > 0 else 0.0, "generate_seconds": generate_seconds,
           "save_seconds": save_seconds, "source_array_bytes": emb.nbytes + ids.nbytes,
           "rss_before_add_bytes": rss_before}
    out.update(_memory())
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("search")
    s.add_argument("--root", required=True)
    s.add_argument("--table", required=True)
    s.add_argument("--queries", required=True, help=".npy of float32 query vectors (queries x dim)")
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--nprobes", type=int, default=20)
    s.add_argument("--warmup", type=int, default=-1, help="queries run before timing (-1: every query once)")
    s.add_argument("--check", type=int, default=20, help="queries whose ids are reported")
    a = sub.add_parser("add")
    a.add_argument("--root", required=True)
    a.add_argument("--table", required=True)
    a.add_argument("--rows", type=int, required=True)
    a.add_argument("--dim", type=int, default=128)
    a.add_argument("--npy", required=True, help="where the generated rows are saved")
    a.add_argument("--seed", type=int, default=42)
    a.add_argument("--batch-rows", type=int, help="rows per chunk t.add streams (default: the package's)")
    for p in (s, a):
        p.add_argument("--out", help="write the JSON here instead of stdout")
    args = parser.parse_args()
    out = search(args) if args.mode == "search" else add(args)
    text = json.dumps(out)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
