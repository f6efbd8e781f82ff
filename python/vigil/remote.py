"""A `vigil serve` server as the package's engine: the same calls as the extension's Session
(execute, select, schema, append, read, versions) over the JSON HTTP API, with a bearer token.
Statements go to POST /v1/sql; rows are streamed to POST .../rows as JSON Lines in one request
(one commit) with an Idempotency-Key; reads are SELECTs. One HTTP connection per request."""

import datetime
import decimal
import http.client
import json
import re
import urllib.parse
import uuid

import numpy as np

from .errors import Error, FailedPreconditionError, RateLimitedError, ResourceExhaustedError, from_code

_VECTOR = re.compile(r"^VECTOR\((FLOAT32|FLOAT16), (\d+)\)$")
_DECIMAL = re.compile(r"^DECIMAL\((\d+), ?(\d+)\)$")
_VARCHAR = re.compile(r"^VARCHAR\((\d+)\)$")
_EPOCH_DAY = np.datetime64("1970-01-01", "D")


def describe(name, type_text, not_null):
    """The field tuple Session.schema gives, from a type as the server writes it."""
    t = type_text.upper()
    dim = precision = scale = max_length = 0
    if m := _VECTOR.match(t):
        kind, dim = ("VECTOR32" if m.group(1) == "FLOAT32" else "VECTOR16"), int(m.group(2))
    elif m := _DECIMAL.match(t):
        kind, precision, scale = "DECIMAL", int(m.group(1)), int(m.group(2))
    elif m := _VARCHAR.match(t):
        kind, max_length = "STRING", int(m.group(1))
    else:
        kind = t
    return (name, kind, not not_null, dim, precision, scale, max_length, type_text)


def _json_value(kind, scale, data, offsets, i):
    """Row i of a normalized chunk column (vigil._columns.normalize) as a JSON value."""
    if kind == "STRING":
        return bytes(data[int(offsets[i]):int(offsets[i + 1])]).decode("utf-8", "surrogatepass")
    if kind in ("VECTOR32", "VECTOR16"):
        return [float(x) for x in data[i]]
    if kind == "BOOL":
        return bool(data[i])
    if kind == "DATE":
        return str(_EPOCH_DAY + int(data[i]))
    if kind == "TIMESTAMP":
        return str(np.datetime64(int(data[i]), "us")) + "Z"
    if kind == "DECIMAL":
        return str(decimal.Decimal(int(data[i])).scaleb(-scale))
    return data[i].item()


def _lines(fields, chunks, counter):
    for rows, columns in chunks:
        out = []
        for i in range(rows):
            row = {}
            for f, (data, offsets, valid) in zip(fields, columns):
                row[f.name] = None if valid is not None and not valid[i] else _json_value(
                    f.kind, f.scale, data, offsets, i)
            out.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
        counter[0] += rows
        if out:
            yield ("\n".join(out) + "\n").encode("utf-8", "surrogatepass")


def _cell(c):
    """A /v1/sql cell as the embedded connection gives it: a vector (a JSON array; null for an element
    that is not finite) as a FLOAT32 array."""
    if isinstance(c, list):
        return np.array([np.nan if x is None else x for x in c], dtype=np.float32)
    return c


def _stored(field, cells):
    """SELECT cells of one column as the extension's read gives them: (values, valid)."""
    valid = np.array([c is not None for c in cells], dtype=np.uint8)
    present = valid.all()
    kind = field.kind
    if kind == "STRING":
        return list(cells), (None if present else valid)
    if kind in ("VECTOR32", "VECTOR16"):
        values = np.zeros((len(cells), field.dim), dtype=np.float32)
        for i, c in enumerate(cells):
            if c is not None:
                values[i] = c
        values = values if kind == "VECTOR32" else values.astype(np.float16)
        return values, (None if present else valid)
    if kind == "DECIMAL":
        # SQL reads DECIMAL as a double; its unscaled value rounds back exactly within 15 digits.
        cells = [None if c is None else round(c * 10**field.scale) for c in cells]
    dtype = {"BOOL": np.bool_, "TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "DATE": np.int32,
             "FLOAT": np.float32, "DOUBLE": np.float64}.get(kind, np.int64)
    values = np.array([0 if c is None else c for c in cells], dtype=dtype)
    return values, (None if present else valid)


_MAX_VERSIONS = 10000  # the server's page bound of GET .../versions


def _micros(commit_time):
    """Unix microseconds of a "YYYY-MM-DD HH:MM:SS.mmm" UTC commit time."""
    at = datetime.datetime.strptime(commit_time, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    return round(at.timestamp() * 1e6)


class RemoteSession:
    """The calls of the extension's Session against the server at `url` as `token`."""

    def __init__(self, url, token, timeout):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Error("INVALID_ARGUMENT", f"url {url!r}: expected http://host:port or https://host:port")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._token = token
        self._timeout = timeout

    def _request(self, method, path, body=None, content_type="application/json", headers=None):
        connection = (http.client.HTTPSConnection if self._https else http.client.HTTPConnection)(
            self._host, self._port, timeout=self._timeout)
        all_headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        if body is not None:
            all_headers["Content-Type"] = content_type
        all_headers.update(headers or {})
        try:
            chunked = body is not None and not isinstance(body, bytes)
            connection.request(method, path, body=body, headers=all_headers, encode_chunked=chunked)
            response = connection.getresponse()
            text = response.read()
        except (OSError, http.client.HTTPException) as e:
            raise Error("UNAVAILABLE", f"{method} {path} on {self._host}:{self._port}: {e}") from None
        finally:
            connection.close()
        try:
            document = json.loads(text) if text else {}
        except ValueError:
            document = {"code": "INTERNAL", "detail": text[:200].decode("utf-8", "replace")}
        if response.status >= 400:
            code = document.get("code", f"HTTP_{response.status}")
            detail = document.get("detail", "")
            error = from_code(code, detail, document.get("subcode", ""))
            if isinstance(error, RateLimitedError):
                retry_after = response.getheader("Retry-After", "1")
                error.retry_after = int(retry_after) if retry_after.isdigit() else 1
            raise error
        return document

    @staticmethod
    def _result(r):
        rows = [tuple(_cell(c) for c in row) for row in r["rows"]]
        return (r["columns"], rows, r["message"], r["admitted_jobs"], r["warnings"])

    def job(self, job_id):
        """GET /v1/jobs/{id}: the job's items, events and the server's state vocabulary flags."""
        return self._request("GET", f"/v1/jobs/{int(job_id)}")

    def execute(self, text):
        results = self._request("POST", "/v1/sql", json.dumps({"sql": text}).encode())["results"]
        if not results:
            return ([], [], "", [], [])
        return self._result(results[-1])

    def schema(self, database, table):
        detail = self._request("GET", f"/v1/databases/{database}/tables/{table}")
        return [describe(f["name"], f["type"], f.get("not_null", False)) for f in detail["fields"]]

    def append(self, database, table, chunks):
        from ._columns import Field
        fields = [Field(*f) for f in self.schema(database, table)]
        counter = [0]
        self._request("POST", f"/v1/databases/{database}/tables/{table}/rows", _lines(fields, chunks, counter),
                      "application/x-ndjson", {"Idempotency-Key": f"python-add-{uuid.uuid4()}"})
        return counter[0]

    def read(self, database, table, version, columns):
        if version is not None:
            raise FailedPreconditionError("FAILED_PRECONDITION", "a checked-out version is read on the server's "
                                          "root (vigil.connect(path)); the HTTP API reads the newest")
        from ._columns import Field
        fields = {f[0].lower(): Field(*f) for f in self.schema(database, table)}
        wanted = [fields[c.lower()] for c in columns] if columns else list(fields.values())
        names, cells, _, _, _ = self.execute(
            f"SELECT {', '.join(f.name for f in wanted)} FROM {database}.{table}")
        by_column = list(zip(*cells)) if cells else [() for _ in names]
        values, valid = [], []
        for f, column in zip(wanted, by_column):
            v, ok = _stored(f, list(column))
            values.append(v)
            valid.append(ok)
        return [f.name for f in wanted], values, valid, None

    def versions(self, database, table):
        listed = self._request("GET", f"/v1/databases/{database}/tables/{table}/versions?limit={_MAX_VERSIONS}")
        if len(listed["versions"]) >= _MAX_VERSIONS:
            raise ResourceExhaustedError("RESOURCE_EXHAUSTED", f"{database}.{table} has {_MAX_VERSIONS} versions or "
                                         "more, more than one request lists; VACUUM it or list them embedded")
        return [(v["Version"], v["ParentVersion"] or 0, _micros(v["CommitTime"]), v["Operation"], v["Rows"],
                 v["Fragments"]) for v in listed["versions"]]

    def select(self, sql, params):
        raise FailedPreconditionError("FAILED_PRECONDITION", "bound values are not sent over HTTP")
