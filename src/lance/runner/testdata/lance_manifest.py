"""The tests' own reader and editor of a Lance manifest's protobuf (Lance's protos/table.proto),
for the metadata LanceDB itself never writes wrong: a manifest whose index entries disagree with
its schema or with each other, and one that is well-formed protobuf LanceDB cannot decode.

A manifest file ends in a 16-byte footer (the manifest message's offset, u64 LE; the format
version; "LANC"); at the offset a u32 LE length prefixes the `Manifest` message. Its field 6 is
the offset of the index section (a u32 LE length and an `IndexSection` message) earlier in the
file; each `IndexMetadata` there has uuid = 1 (`UUID {bytes uuid = 1}`), fields = 2 (packed
int32), name = 3, dataset_version = 4.
"""

import os
import struct


def newest(path):
    """The newest manifest file of the dataset at `path` (V2 names: 2^64 - 1 - version)."""
    versions = os.path.join(path, "_versions")
    return os.path.join(versions, min((m for m in os.listdir(versions) if m.endswith(".manifest")),
                                      key=lambda m: int(m.split(".")[0])))


def _varint(b, at):
    value = shift = 0
    while True:
        byte = b[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def fields(b, start=0, end=None):
    """[(number, wire type, value)] of the message b[start:end]: an int for a varint, else the
    (start, end) span of the field's bytes in `b`."""
    end = len(b) if end is None else end
    at, out = start, []
    while at < end:
        key, at = _varint(b, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, at = _varint(b, at)
        else:
            size = 8 if kind == 1 else 4 if kind == 5 else None
            if size is None:
                size, at = _varint(b, at)
            value, at = (at, at + size), at + size
        out.append((number, kind, value))
    return out


def _encode_varint(v):
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        out.append(byte | (0x80 if v else 0))
        if not v:
            return bytes(out)


def encode(items):
    """The message of [(number, wire type, value)], each value an int (varint) or bytes."""
    out = bytearray()
    for number, kind, value in items:
        out += _encode_varint(number << 3 | kind)
        if kind == 0:
            out += _encode_varint(value)
        else:
            if kind == 2:
                out += _encode_varint(len(value))
            out += value
    return bytes(out)


def _message_span(b):
    offset = struct.unpack("<Q", b[-16:-8])[0]
    return offset + 4, offset + 4 + struct.unpack("<I", b[offset:offset + 4])[0]


def index_entries(b):
    """Each index entry of manifest bytes `b`: name, and the spans of its UUID's 16 bytes and of
    its packed field ids."""
    start, end = _message_span(b)
    section = [v for n, _, v in fields(b, start, end) if n == 6][0]
    size = struct.unpack("<I", b[section:section + 4])[0]
    out = []
    for _, _, (s, e) in fields(b, section + 4, section + 4 + size):
        entry = {n: v for n, _, v in fields(b, s, e)}
        uuid = [v for n, _, v in fields(b, *entry[1]) if n == 1][0]
        out.append({"name": bytes(b[slice(*entry[3])]).decode(), "uuid": uuid, "field_ids": entry[2]})
    return out


def edit_in_place(path, edit):
    """Applies `edit(bytearray, entries)` to the newest manifest of `path`, which must keep its size."""
    manifest = newest(path)
    with open(manifest, "rb") as f:
        b = bytearray(f.read())
    size = len(b)
    edit(b, index_entries(b))
    assert len(b) == size
    with open(manifest, "wb") as f:
        f.write(b)


def set_field(path, numbers, value):
    """Rewrites the newest manifest of `path` with the field at `numbers` (field numbers from the
    `Manifest` message down, the first occurrence at each level) set to the bytes `value`: still
    well-formed protobuf with a consistent footer, whatever LanceDB then makes of it. E.g. (2, 2,
    1) is the path of the first data file of the first fragment (DataFragment.files, DataFile.path)
    and (1, 5) the logical type of the schema's first field (lance.file.Field.logical_type)."""
    manifest = newest(path)
    with open(manifest, "rb") as f:
        b = f.read()
    start, end = _message_span(b)

    def rewritten(raw, numbers):
        items, done = [], False
        for number, kind, v in fields(raw):
            v = v if kind == 0 else bytes(raw[slice(*v)])
            if number == numbers[0] and not done:
                v = value if len(numbers) == 1 else rewritten(v, numbers[1:])
                done = True
            items.append((number, kind, v))
        assert done, numbers
        return encode(items)

    body = rewritten(bytes(b[start:end]), list(numbers))
    # The manifest message is the last thing before the footer: what precedes it keeps its offsets.
    with open(manifest, "wb") as f:
        f.write(b[:start - 4] + struct.pack("<I", len(body)) + body + b[-16:])
