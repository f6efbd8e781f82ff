// Runs one request of Vigil's Lance provider against a Lance dataset through
// LanceDB, for the isolated worker: the request is one JSON object (argv[2]);
// progress and the result are JSON lines on stdout, the last line is either
// {"event": "result", ...} (exit 0) or {"event": "error", "code", "message"}
// (exit 1). Operations: inspect (schema, version, history, indexes), create_index
// (CREATE / REPLACE of IVF_PQ, BTREE, BITMAP, FTS), drop_index,
// optimize_index (BUILD: LanceDB's optimize, which also indexes unindexed rows,
// with no history pruned) and history (each version from `from_version` on, with
// its indexes and data statistics: the evidence an unknown outcome is read from).
// A write states the version it was admitted at (`expected_version`); a dataset at
// another version is STALE_ADMISSION before anything is written. A write may name
// a `stop_at` point (before_commit, after_commit): there the runner reports
// {"event": "progress", "phase": "STOPPED_AT"} and waits until it is killed (the
// worker's crash tests); a write may name `fail_after_commit` (a message): the runner then
// fails with that untyped error right after LanceDB's commit. Every path and name is checked against an allowlist first; a dataset
// reached through a symbolic link is refused, and reading one never writes anything.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lancedb from '@lancedb/lancedb';

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const DATASET = /^\/(?:[A-Za-z0-9._-]+\/)*[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\.lance$/;
const TYPES = ['IVF_PQ', 'BTREE', 'BITMAP', 'FTS'];
// Properties each index type accepts, with their checks and LanceDB's option names.
// `index_type` names the type itself (seed 000 section 2.1's `USING ANN PROPERTIES ("index_type" =
// "IVF_PQ", ...)`): taken when it is the request's type, no LanceDB option.
const PROPERTIES = {
  IVF_PQ: {
    index_type: {option: null, parse: (v) => oneOf(v, ['IVF_PQ'])},
    metric: {option: 'distanceType', parse: (v) => oneOf(v, ['l2', 'cosine', 'dot'])},
    num_partitions: {option: 'numPartitions', parse: (v) => int(v, 1, 65536)},
    num_sub_vectors: {option: 'numSubVectors', parse: (v) => int(v, 1, 4096)},
    num_bits: {option: 'numBits', parse: (v) => oneOf(v, ['8'])},  // seed 000 section 2.3: fixed at 8
    max_iterations: {option: 'maxIterations', parse: (v) => int(v, 1, 1000)},
    sample_rate: {option: 'sampleRate', parse: (v) => int(v, 1, 1 << 20)},
  },
  BTREE: {},
  BITMAP: {},
  FTS: {
    with_position: {option: 'withPosition', parse: (v) => bool(v)},
    base_tokenizer: {option: 'baseTokenizer', parse: (v) => oneOf(v, ['simple', 'whitespace', 'raw'])},
    language: {option: 'language', parse: (v) => oneOf(v, ['English'])},
    lower_case: {option: 'lowercase', parse: (v) => bool(v)},
    stem: {option: 'stem', parse: (v) => bool(v)},
    remove_stop_words: {option: 'removeStopWords', parse: (v) => bool(v)},
  },
};

class Refused extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function invalid(message) { return new Refused('INVALID_ARGUMENT', message); }
function oneOf(v, allowed) {
  if (!allowed.includes(String(v))) throw invalid(`must be one of ${allowed.join(', ')}`);
  return String(v);
}
function int(v, lo, hi) {
  const s = String(v);
  if (!/^\d{1,9}$/.test(s) || Number(s) < lo || Number(s) > hi) throw invalid(`must be an integer in ${lo}..${hi}`);
  return Number(s);
}
function bool(v) { return oneOf(v, ['true', 'false']) === 'true'; }

function emit(event, fields) { process.stdout.write(JSON.stringify(Object.assign({event}, fields)) + '\n'); }

function parseRequest(text) {
  let r;
  try {
    r = JSON.parse(text);
  } catch (e) {
    throw invalid('the request is not JSON: ' + e.message);
  }
  if (typeof r !== 'object' || r === null || Array.isArray(r)) throw invalid('the request must be a JSON object');
  if (!['inspect', 'history', 'create_index', 'drop_index', 'optimize_index'].includes(r.op)) {
    throw invalid('op must be inspect, history, create_index, drop_index or optimize_index');
  }
  if (typeof r.dataset !== 'string' || !DATASET.test(r.dataset) || r.dataset.split('/').includes('..')) {
    throw invalid('dataset must be an absolute path ending in <name>.lance, without ..');
  }
  if (r.op === 'history' && (!Number.isSafeInteger(r.from_version) || r.from_version < 1)) {
    throw invalid('from_version must be a positive version');
  }
  if (r.stop_at !== undefined && !['before_commit', 'after_commit'].includes(r.stop_at)) {
    throw invalid('stop_at must be before_commit or after_commit');
  }
  if (r.fail_after_commit !== undefined && typeof r.fail_after_commit !== 'string') {
    throw invalid('fail_after_commit must be a message');
  }
  if (r.op !== 'inspect' && r.op !== 'history') {
    if (!Number.isSafeInteger(r.expected_version) || r.expected_version < 1) {
      throw invalid('expected_version must be the positive version the request was admitted at');
    }
    if (r.op === 'create_index') {
      if (typeof r.name !== 'string' || !NAME.test(r.name)) throw invalid('name must match ' + NAME.source);
    } else {
      checkExistingName(r.name);
    }
  }
  if (r.op === 'create_index') {
    if (typeof r.column !== 'string' || !NAME.test(r.column)) throw invalid('column must match ' + NAME.source);
    if (!TYPES.includes(r.index_type)) throw invalid('index_type must be one of ' + TYPES.join(', '));
  }
  return r;
}

// The name a drop_index or optimize_index request gives: the exact stored name of an index the
// dataset lists (run() refuses any other as NOT_FOUND before anything is written), which an
// outside LanceDB writer may have chosen outside NAME, e.g. "Índice". It is checked as a name
// that is only ever compared and passed back to LanceDB: well-formed Unicode of 1 to 1,024 UTF-8
// bytes (seed 000 appendix A) without control characters or path separators.
const FORBIDDEN_IN_NAMES = /[\u0000-\u001f\u007f-\u009f/\\]/;
function checkExistingName(name) {
  if (typeof name !== 'string' || name.length === 0 || !name.isWellFormed() ||
      Buffer.byteLength(name, 'utf8') > MAX_STRING_BYTES || FORBIDDEN_IN_NAMES.test(name)) {
    throw invalid(`name must be an existing index's name: 1 to ${MAX_STRING_BYTES} bytes of UTF-8 without ` +
      'control characters, / or \\');
  }
}

// The index part of an inspect request's `check_index` ({name, column, index_type,
// properties}): what a create_index of it would be refused for, refused now.
function checkedIndex(c) {
  if (typeof c !== 'object' || c === null || !TYPES.includes(c.index_type)) {
    throw invalid('check_index.index_type must be one of ' + TYPES.join(', '));
  }
  for (const key of ['name', 'column']) {
    if (c[key] !== undefined && (typeof c[key] !== 'string' || !NAME.test(c[key]))) {
      throw invalid(`a Lance index ${key} must match ${NAME.source}: '${String(c[key]).slice(0, 100)}'`);
    }
  }
  return c;
}

// The LanceDB index config of a create_index request; an unknown or bad property is refused by name.
function indexConfig(r) {
  const allowed = PROPERTIES[r.index_type];
  const options = {};
  if (r.properties !== undefined && (typeof r.properties !== 'object' || r.properties === null ||
      Array.isArray(r.properties))) {
    throw invalid('properties must be an object');
  }
  for (const [key, value] of Object.entries(r.properties || {})) {
    const spec = allowed[key];
    if (!spec) throw invalid(`index type ${r.index_type} has no property '${key}'`);
    try {
      const parsed = spec.parse(value);
      if (spec.option !== null) options[spec.option] = parsed;
    } catch (e) {
      throw invalid(`property '${key}' ${e.message}`);
    }
  }
  switch (r.index_type) {
    case 'IVF_PQ': return lancedb.Index.ivfPq(options);
    case 'BTREE': return lancedb.Index.btree();
    case 'BITMAP': return lancedb.Index.bitmap();
    default: return lancedb.Index.fts(options);
  }
}

// Refuses a dataset reached through a symbolic link: its path must be its real path (Vigil
// registers the resolved path, below an allowed directory), and no entry of its folder nor of
// its `_versions` folder may be a link that leads out of it.
function checkNoLinks(dataset) {
  const linked = (p) => {
    throw invalid(`the Lance dataset ${dataset} is reached through a symbolic link (${p}); ` +
      'links are never followed');
  };
  let real;
  try {
    real = fs.realpathSync(dataset);
  } catch (e) {
    throw new Refused('NOT_FOUND', `no Lance dataset at ${dataset}`);
  }
  if (real !== dataset) linked(dataset);
  for (const dir of [dataset, path.join(dataset, '_versions')]) {
    let entries = [];
    try {
      entries = fs.readdirSync(dir, {withFileTypes: true});
    } catch (e) {
      continue;  // a missing _versions is refused as no dataset below
    }
    for (const e of entries) {
      if (e.isSymbolicLink()) linked(path.join(dir, e.name));
    }
  }
}

// The varint at `at` of `b` (at most 10 bytes): {value (a BigInt), at (just past it)}, or null.
function readVarint(b, at) {
  let value = 0n;
  for (let i = 0; i < 10; ++i) {
    if (at >= b.length) return null;
    const byte = b[at++];
    value |= BigInt(byte & 0x7f) << BigInt(7 * i);
    if ((byte & 0x80) === 0) return {value, at};
  }
  return null;
}

// The fields of the protobuf message `b`, in the wire format only: [{number, type, value}],
// `value` a BigInt for a varint (type 0) and a Buffer view for the others (types 1, 2 and 5);
// null unless `b` is a sequence of well-formed fields consuming it exactly (keys with a field
// number above 0 and wire type 0, 1, 2 or 5, varints of at most 10 bytes, lengths that stay
// inside `b`).
function protobufFields(b) {
  const out = [];
  let at = 0;
  const varint = () => {
    const v = readVarint(b, at);
    if (v === null) return null;
    at = v.at;
    return v.value;
  };
  while (at < b.length) {
    const key = varint();
    if (key === null || key >> 3n === 0n) return null;
    const number = Number(key >> 3n);
    const type = Number(key & 7n);
    if (type === 0) {
      const value = varint();
      if (value === null) return null;
      out.push({number, type, value});
      continue;
    }
    let size;
    if (type === 1) {
      size = 8;
    } else if (type === 5) {
      size = 4;
    } else if (type === 2) {
      const n = varint();
      if (n === null || n > BigInt(b.length - at)) return null;
      size = Number(n);
    } else {
      return null;
    }
    if (at + size > b.length) return null;
    out.push({number, type, value: b.subarray(at, at + size)});
    at += size;
  }
  return out;
}

// Appendix A of seed 000: an external string is valid UTF-8 of at most 1,024 bytes; a dataset
// has at most 10,000 index entries. Past them the read fails closed, nothing is truncated.
const MAX_STRING_BYTES = 1024;
const MAX_ENTRIES = 10000;
// A manifest file is read whole, up to this size.
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;
// Lance's system indexes (lance-index's FRAG_REUSE_INDEX_NAME and MEM_WAL_INDEX_NAME): not
// user-visible indexes, listed by neither LanceDB nor Vigil.
const SYSTEM_INDEXES = ['__lance_frag_reuse', '__lance_mem_wal'];

// The manifest file `file` of `dataset`, checked by its structure before anything of it is
// decoded: its last 16 bytes are the manifest's offset (u64 LE), the format's major and minor
// version (u16 LE each) and the magic "LANC"; at the offset a u32 LE length prefixes the
// protobuf message that ends where the footer begins, well-formed in protobuf's wire format.
// Returns the file's bytes and the message's fields; `corrupt(why)` makes the error of a file
// that fails this (CORRUPTION, quoting none of its bytes).
function readManifest(file, corrupt) {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  let b;
  try {
    const size = fs.fstatSync(fd).size;
    if (size > MAX_MANIFEST_BYTES) {
      throw new Refused('RESOURCE_EXHAUSTED', `the manifest ${file} has ${size} bytes, more than ${MAX_MANIFEST_BYTES}`);
    }
    b = Buffer.alloc(size);
    for (let at = 0; at < size;) {
      const n = fs.readSync(fd, b, at, size - at, at);
      if (n === 0) throw corrupt('it ended while it was read');
      at += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  if (b.length < 16 + 4) throw corrupt(`it has ${b.length} bytes, fewer than a manifest's length prefix and footer`);
  if (b.toString('latin1', b.length - 4) !== 'LANC') throw corrupt('its footer does not end in the Lance magic');
  const offset = b.readBigUInt64LE(b.length - 16);
  if (offset > BigInt(b.length - 16 - 4)) throw corrupt('its footer points outside the file');
  const at = Number(offset);
  if (b.readUInt32LE(at) !== b.length - 16 - 4 - at) throw corrupt('its length prefix does not match its size');
  const fields = protobufFields(b.subarray(at + 4, b.length - 16));
  if (fields === null) throw corrupt('its message is not well-formed protobuf');
  return {bytes: b, fields};
}

// The newest manifest of `dataset` (`_versions/<n>.manifest`; LanceDB's V2 names are 20
// digits, 2^64 - 1 - version), checked by its structure (readManifest) before LanceDB reads
// it. A manifest that fails this is CORRUPTION, and its bytes are never quoted. Returns its
// version.
function checkNewestManifest(dataset) {
  const dir = path.join(dataset, '_versions');
  let newest = null;
  for (const name of fs.readdirSync(dir)) {
    const m = /^(\d{1,20})\.manifest$/.exec(name);
    if (!m) continue;
    const n = BigInt(m[1]);
    const version = m[1].length === 20 ? (1n << 64n) - 1n - n : n;
    if (newest === null || version > newest.version) newest = {version, name};
  }
  if (newest === null) throw new Refused('NOT_FOUND', `no Lance dataset at ${dataset} (no manifest in _versions)`);
  readManifest(path.join(dir, newest.name), (why) => new Refused('CORRUPTION',
    `the newest manifest of the Lance dataset ${dataset} (version ${newest.version}) does not decode: ${why}`));
  return newest.version;
}

// Protobuf field `number` of `fields` (the last one, as protobuf reads a repeated scalar
// field), which must have wire type `type`; `absent` when there is none.
function lastField(fields, number, type, absent, corrupt, what) {
  let value = absent;
  for (const f of fields) {
    if (f.number !== number) continue;
    if (f.type !== type) throw corrupt(`${what} has wire type ${f.type}, not ${type}`);
    value = f.value;
  }
  return value;
}

function submessage(bytes, corrupt, what) {
  const fields = protobufFields(bytes);
  if (fields === null) throw corrupt(`${what} is not well-formed protobuf`);
  return fields;
}

const utf8 = new TextDecoder('utf-8', {fatal: true});

// A string field of the manifest: valid UTF-8 of at most 1,024 bytes (its bytes never quoted).
function manifestString(bytes, corrupt, what) {
  if (bytes.length > MAX_STRING_BYTES) {
    throw new Refused('RESOURCE_EXHAUSTED',
      `the Lance dataset has ${what} of ${bytes.length} bytes, more than ${MAX_STRING_BYTES}`);
  }
  try {
    return utf8.decode(bytes);
  } catch (e) {
    throw corrupt(`${what} is not valid UTF-8`);
  }
}

// An int32 varint (a negative one is sign-extended to 64 bits on the wire).
function int32(v) { return Number(BigInt.asIntN(32, v)); }

// A field path as Lance formats it (lance-core's format_field_path): names joined by '.', a
// name holding '.' or '`' quoted in backticks with its backticks doubled.
function fieldPath(names) {
  return names.map((n) => (n.includes('.') || n.includes('`') ? '`' + n.replaceAll('`', '``') + '`' : n)).join('.');
}

// The physical index entries of `version` of `dataset`, read from that version's manifest (the
// `IndexSection` at the manifest's `index_section` offset: Lance's protos/table.proto), each
// with its name, UUID, field ids, the path of each field id in the version's schema (null when
// no field has it), the dataset version it covers (`IndexMetadata.dataset_version`) and the
// type URL of its details. System indexes are left out. LanceDB lists none of this per entry.
function indexEntries(dataset, version) {
  const corrupt = (why) => new Refused('CORRUPTION',
    `the manifest of the Lance dataset ${dataset} at version ${version} does not decode: ${why}`);
  const dir = path.join(dataset, '_versions');
  const v2 = ((1n << 64n) - 1n - BigInt(version)).toString().padStart(20, '0');
  const file = [`${v2}.manifest`, `${version}.manifest`].map((n) => path.join(dir, n)).find((f) => fs.existsSync(f));
  if (file === undefined) throw corrupt('it has no manifest file');
  const {bytes, fields: manifest} = readManifest(file, corrupt);
  if (lastField(manifest, 3, 0, 0n, corrupt, 'its version') !== BigInt(version)) {
    throw corrupt('its manifest names another version');
  }
  // The schema: lance.file.Field {name = 2, id = 3, parent_id = 4}; a top-level field's parent is -1.
  const byId = new Map();
  for (const f of manifest) {
    if (f.number !== 1) continue;
    if (f.type !== 2) throw corrupt('a field of its schema is not a message');
    const field = submessage(f.value, corrupt, 'a field of its schema');
    const name = manifestString(lastField(field, 2, 2, Buffer.alloc(0), corrupt, 'a field name'), corrupt,
      'a field name');
    byId.set(int32(lastField(field, 3, 0, 0n, corrupt, 'a field id')),
      {name, parent: int32(lastField(field, 4, 0, 0n, corrupt, 'a field parent'))});
  }
  const resolve = (id) => {
    const names = [];
    for (let f = byId.get(id); f !== undefined; f = byId.get(f.parent)) {
      names.unshift(f.name);
      if (f.parent === -1) return fieldPath(names);
      if (names.length > byId.size) break;  // a cycle of parents
    }
    return null;
  };
  const section = lastField(manifest, 6, 0, null, corrupt, 'its index section offset');
  if (section === null) return [];
  // At the offset: a u32 LE length and the IndexSection message, before the footer.
  if (section > BigInt(bytes.length - 16 - 4)) throw corrupt('its index section lies outside the file');
  const at = Number(section);
  const length = bytes.readUInt32LE(at);
  if (length > bytes.length - 16 - 4 - at) throw corrupt('its index section lies outside the file');
  const out = [];
  for (const f of submessage(bytes.subarray(at + 4, at + 4 + length), corrupt, 'its index section')) {
    if (f.number !== 1) continue;
    if (f.type !== 2) throw corrupt('an index entry is not a message');
    if (out.length === MAX_ENTRIES) {
      throw new Refused('RESOURCE_EXHAUSTED', `the Lance dataset has more than ${MAX_ENTRIES} index entries`);
    }
    // IndexMetadata {uuid = 1 (UUID {bytes uuid = 1}), repeated int32 fields = 2, name = 3,
    // uint64 dataset_version = 4, google.protobuf.Any index_details = 6 {type_url = 1}}.
    const entry = submessage(f.value, corrupt, 'an index entry');
    const name = manifestString(lastField(entry, 3, 2, Buffer.alloc(0), corrupt, 'an index name'), corrupt,
      'an index name');
    if (SYSTEM_INDEXES.includes(name)) continue;
    const uuidMessage = lastField(entry, 1, 2, null, corrupt, 'an index UUID');
    const uuid = uuidMessage === null ? null :
      lastField(submessage(uuidMessage, corrupt, 'an index UUID'), 1, 2, null, corrupt, 'an index UUID');
    if (uuid === null || uuid.length !== 16) throw corrupt('an index entry has no 16-byte UUID');
    const hex = uuid.toString('hex');
    const ids = [];
    for (const g of entry) {
      if (g.number !== 2) continue;
      if (g.type === 0) {
        ids.push(int32(g.value));
      } else if (g.type === 2) {  // packed
        for (let at = 0; at < g.value.length;) {
          const v = readVarint(g.value, at);
          if (v === null) throw corrupt('the field ids of an index entry are not varints');
          ids.push(int32(v.value));
          at = v.at;
        }
      } else {
        throw corrupt(`the field ids of an index entry have wire type ${g.type}`);
      }
      if (ids.length > 64) {
        throw new Refused('RESOURCE_EXHAUSTED', 'the Lance dataset has an index entry of more than 64 columns');
      }
    }
    const covers = lastField(entry, 4, 0, 0n, corrupt, 'the dataset version of an index entry');
    if (covers > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt('the dataset version of an index entry is too large');
    const details = lastField(entry, 6, 2, null, corrupt, 'the details of an index entry');
    const typeUrl = details === null ? null : manifestString(
      lastField(submessage(details, corrupt, 'the details of an index entry'), 1, 2, Buffer.alloc(0), corrupt,
        'an index type URL'), corrupt, 'an index type URL');
    out.push({name,
      uuid: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
      field_ids: ids, columns: ids.map(resolve), dataset_version: Number(covers), type_url: typeUrl});
  }
  return out;
}

// Opens the dataset through a directory-listing connection to its folder, without LanceDB's
// namespace manifest: nothing is ever written into the folder (no `__manifest`), and only
// what LanceDB itself reads of the dataset is read. Returns the table and the version of the
// newest manifest, whose structure was checked.
async function open(dataset) {
  checkNoLinks(dataset);
  if (!fs.existsSync(path.join(dataset, '_versions'))) {
    throw new Refused('NOT_FOUND', `no Lance dataset at ${dataset} (no _versions folder)`);
  }
  const version = checkNewestManifest(dataset);
  const table = await readingWith(dataset, version, 'opening it', async () => {
    const db = await lancedb.connectNamespace('dir', {root: path.dirname(dataset), manifestEnabled: false,
      extraProperties: {dir_listing_enabled: 'true'}});
    return db.openTable(path.basename(dataset, '.lance'));
  });
  return {table, version};
}

// Runs `read`, a read of `dataset` by LanceDB. The dataset's newest manifest passed the
// structural check, so a failure of LanceDB here is in what it decoded: CORRUPTION, with a
// fixed message naming the dataset, the version and what was being read, never LanceDB's own
// text (it can quote the file's bytes, and a message is never read for a code: seed 000
// section 3.1). The failure is classified by where it happened alone.
async function readingWith(dataset, version, what, read) {
  try {
    return await read();
  } catch (e) {
    if (e instanceof Refused) throw e;
    throw new Refused('CORRUPTION', `LanceDB could not read the Lance dataset ${dataset} at version ${version} ` +
      `(${what}): its files do not decode as LanceDB expects`);
  }
}

function describeIndex(ix) {
  return {name: ix.name, uuid: ix.indexUuid, type: ix.indexType, columns: ix.columns,
    indexed_rows: ix.numIndexedRows ?? null, unindexed_rows: ix.numUnindexedRows ?? null,
    type_url: ix.typeUrl ?? null, segments: ix.numSegments ?? null};
}

// What a version holds besides its indexes: an index commit leaves all of it unchanged.
async function dataStats(table) {
  const stats = await table.stats();
  return {rows: Number(stats.numRows), data_bytes: Number(stats.totalBytes),
    fragments: Number(stats.fragmentStats?.numFragments ?? 0)};
}

// Each field's name, Arrow type and nullability; a list's also whether its element is nullable.
// Lance's schema stores a fixed-size list as one field of logical type
// `fixed_size_list:<element>:<size>` with no child field, and reads every such element back as
// nullable (lance-core's datatypes.rs: `ArrowField::new("item", elem_type, true)`): whatever a
// writer declared, LanceDB reports `element_nullable: true` for every vector column. Whether a
// vector column's elements are non-null is therefore read from its data (nullElements).
function describeFields(schema) {
  return schema.fields.map((f) => {
    const out = {name: f.name, type: String(f.type), nullable: f.nullable};
    if (/^(Large)?(FixedSize)?List\b/.test(out.type) && f.type.children?.length === 1) {
      out.element_nullable = f.type.children[0].nullable;
    }
    return out;
  });
}

const VECTOR = /^FixedSizeList\[\d+\]<Float(16|32)>$/;

// The number of null elements of vector column `column` of `table` (at its version), from a
// scan of that column: the validity of the elements (the lists' child arrays), counted by
// Arrow. Every row of the version must be scanned.
async function nullElements(table, column, rows) {
  let nulls = 0;
  let seen = 0;
  for await (const batch of table.query().select([column])) {
    for (const d of batch.getChild(column).data) {
      seen += d.length;
      nulls += d.children[0].nullCount;
    }
  }
  if (seen !== rows) throw new Error(`the scan of column ${column} read ${seen} of ${rows} rows`);
  return nulls;
}

// IVF_PQ's column contract on the elements (seed 000 section 2.3: a fixed-size list of
// non-null FLOAT16 or FLOAT32): a column whose elements may be null holds none at this version.
// Adds `null_elements` to the column's field (counted only when the schema allows null elements).
async function countNullElements(table, snap, column) {
  const field = snap.fields.find((f) => f.name === column);
  if (field === undefined || !VECTOR.test(field.type) || field.element_nullable === false) return field;
  field.null_elements = await nullElements(table, column, snap.data.rows);
  return field;
}

async function snapshot(table) {
  const versions = await table.listVersions();
  return {
    version: await table.version(),
    fields: describeFields(await table.schema()),
    versions: versions.map((v) => ({version: v.version, timestamp: v.timestamp.toISOString(),
      rows: Number(v.metadata?.total_rows ?? NaN)})),
    indexes: (await table.listIndices()).map(describeIndex),
    data: await dataStats(table),
  };
}

// Each version from `from` to the newest, as it was: fields, indexes, data statistics. A
// failure of LanceDB reading a version is CORRUPTION naming that version (readingWith).
async function history(dataset, table, from) {
  const newest = await table.version();
  const versions = new Set((await table.listVersions()).map((v) => v.version));
  const out = [];
  for (let v = from; v <= newest; ++v) {
    if (!versions.has(v)) {
      out.push({version: v, missing: true});
      continue;
    }
    out.push(await readingWith(dataset, v, 'reading that version', async () => {
      await table.checkout(v);
      return {version: v, fields: describeFields(await table.schema()),
        indexes: (await table.listIndices()).map(describeIndex), data: await dataStats(table)};
    }));
  }
  await table.checkoutLatest();
  return {version: newest, history: out};
}

// The crash tests' hold point: announced, then held until the process is killed.
async function stopAt(r, point) {
  if (r.stop_at !== point) return;
  emit('progress', {phase: 'STOPPED_AT', point});
  await new Promise(() => setInterval(() => {}, 1 << 30));
}

async function checkVersion(table, expected) {
  const at = await table.version();
  if (at !== expected) {
    throw new Refused('STALE_ADMISSION', `the dataset is at version ${at}, not the admitted version ${expected}: ` +
      'another writer changed it; nothing was written');
  }
}

async function run(r) {
  emit('progress', {phase: 'OPENING'});
  const {table, version: newest} = await open(r.dataset);
  // Everything read before a write reads a dataset whose newest manifest passed the check.
  const reading = (what, read) => readingWith(r.dataset, newest, what, read);
  const before = await reading('reading its newest version', () => snapshot(table));
  if (r.op === 'inspect') {
    // An index request being admitted: its type and properties pass the allowlist here too,
    // and an IVF_PQ column's elements are counted.
    if (r.check_index !== undefined) {
      const c = checkedIndex(r.check_index);
      indexConfig(c);
      if (c.index_type === 'IVF_PQ' && c.column !== undefined) {
        await reading('reading the column to index', () => countNullElements(table, before, c.column));
      }
    }
    before.entries = indexEntries(r.dataset, before.version);
    return before;
  }
  if (r.op === 'history') return history(r.dataset, table, r.from_version);
  await checkVersion(table, r.expected_version);
  await stopAt(r, 'before_commit');
  const existing = before.indexes.find((ix) => ix.name === r.name);
  if (r.op === 'create_index') {
    if (existing && !r.replace) throw new Refused('ALREADY_EXISTS', `index '${r.name}' exists; REPLACE it`);
    const config = indexConfig(r);
    if (r.index_type === 'IVF_PQ') {
      // Admission counted them at this version; checked again before anything is built.
      const field = await reading('reading the column to index', () => countNullElements(table, before, r.column));
      if (field?.null_elements > 0) {
        throw invalid(`USING IVF_PQ needs non-null Float16 or Float32 elements; Lance column '${r.column}' holds ` +
          `${field.null_elements} null elements at version ${before.version}`);
      }
    }
    emit('progress', {phase: 'BUILDING', index: r.name});
    await table.createIndex(r.column, {config, name: r.name, replace: Boolean(r.replace)});
  } else if (r.op === 'drop_index') {
    if (!existing) throw new Refused('NOT_FOUND', `index '${r.name}' does not exist`);
    emit('progress', {phase: 'DROPPING', index: r.name});
    await table.dropIndex(r.name);
  } else {
    if (!existing) throw new Refused('NOT_FOUND', `index '${r.name}' does not exist`);
    emit('progress', {phase: 'OPTIMIZING', index: r.name});
    // Versions are never pruned here: Vigil reads the history to attribute outcomes.
    await table.optimize({cleanupOlderThan: new Date(0)});
  }
  await stopAt(r, 'after_commit');
  // The worker's test hook: an untyped error, as LanceDB raises them, after its commit.
  if (r.fail_after_commit !== undefined) throw new Error(r.fail_after_commit);
  await table.checkoutLatest();
  const after = await snapshot(table);
  return {base_version: before.version, version: after.version,
    index: after.indexes.find((ix) => ix.name === r.name) ?? null, indexes: after.indexes};
}

// The typed code of a failure: only the runner's own refusals carry one. LanceDB's errors
// are untyped (its JavaScript errors carry a message and nothing else), and a message is
// never read for a code (seed 000 section 3.1): each is INTERNAL, which after the write was
// invoked is an unknown outcome for the worker (DROP's NotFound or a CommitConflict cannot be
// told from a failure raised after LanceDB committed).
function errorCode(e) {
  return e instanceof Refused ? e.code : 'INTERNAL';
}

try {
  if (process.argv.length !== 3) throw invalid('usage: node lance_runner.mjs \'<request JSON>\'');
  emit('result', await run(parseRequest(process.argv[2])));
} catch (e) {
  // LanceDB's messages name the Rust source line of each cause; the first cause is kept.
  const message = String(e.message).replace(/,? \/\S+\.rs:\d+:\d+/g, '').split(/\s+Caused by:/)[0];
  emit('error', {code: errorCode(e), message: message.slice(0, 500)});
  process.exitCode = 1;
}
