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
    if (typeof r.name !== 'string' || !NAME.test(r.name)) throw invalid('name must match ' + NAME.source);
  }
  if (r.op === 'create_index') {
    if (typeof r.column !== 'string' || !NAME.test(r.column)) throw invalid('column must match ' + NAME.source);
    if (!TYPES.includes(r.index_type)) throw invalid('index_type must be one of ' + TYPES.join(', '));
  }
  return r;
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

// Whether `b` is a sequence of well-formed protobuf fields (the wire format only: keys with a
// field number above 0 and wire type 0, 1, 2 or 5, varints of at most 10 bytes, lengths that
// stay inside `b`), consuming it exactly.
function wellFormedProtobuf(b) {
  let at = 0;
  const varint = () => {
    let value = 0n;
    for (let i = 0; i < 10; ++i) {
      if (at >= b.length) return null;
      const byte = b[at++];
      value |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return value;
    }
    return null;
  };
  while (at < b.length) {
    const key = varint();
    if (key === null || key >> 3n === 0n) return false;
    const type = Number(key & 7n);
    let skip;
    if (type === 0) {
      if (varint() === null) return false;
      skip = 0;
    } else if (type === 1) {
      skip = 8;
    } else if (type === 5) {
      skip = 4;
    } else if (type === 2) {
      const n = varint();
      if (n === null || n > BigInt(b.length - at)) return false;
      skip = Number(n);
    } else {
      return false;
    }
    if (at + skip > b.length) return false;
    at += skip;
  }
  return true;
}

// The newest manifest of `dataset` (`_versions/<n>.manifest`; LanceDB's V2 names are 20
// digits, 2^64 - 1 - version), checked by its structure before LanceDB reads it: its last 16
// bytes are the manifest's offset (u64 LE), the format's major and minor version (u16 LE
// each) and the magic "LANC"; at the offset a u32 LE length prefixes the protobuf message
// that ends where the footer begins, well-formed in protobuf's wire format. A manifest that
// fails this is CORRUPTION, and its bytes are never quoted.
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
  const corrupt = (why) => new Refused('CORRUPTION',
    `the newest manifest of the Lance dataset ${dataset} (version ${newest.version}) does not decode: ${why}`);
  const file = path.join(dir, newest.name);
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const size = fs.fstatSync(fd).size;
    if (size < 16 + 4) throw corrupt(`it has ${size} bytes, fewer than a manifest's length prefix and footer`);
    const footer = Buffer.alloc(16);
    fs.readSync(fd, footer, 0, 16, size - 16);
    if (footer.toString('latin1', 12, 16) !== 'LANC') throw corrupt('its footer does not end in the Lance magic');
    const offset = footer.readBigUInt64LE(0);
    if (offset > BigInt(size - 16 - 4)) throw corrupt('its footer points outside the file');
    const prefix = Buffer.alloc(4);
    fs.readSync(fd, prefix, 0, 4, Number(offset));
    if (BigInt(prefix.readUInt32LE(0)) !== BigInt(size - 16 - 4) - offset) {
      throw corrupt('its length prefix does not match its size');
    }
    const body = Buffer.alloc(prefix.readUInt32LE(0));
    fs.readSync(fd, body, 0, body.length, Number(offset) + 4);
    if (!wellFormedProtobuf(body)) throw corrupt('its message is not well-formed protobuf');
  } finally {
    fs.closeSync(fd);
  }
}

// Opens the dataset through a directory-listing connection to its folder, without LanceDB's
// namespace manifest: nothing is ever written into the folder (no `__manifest`), and only
// what LanceDB itself reads of the dataset is read.
async function open(dataset) {
  checkNoLinks(dataset);
  if (!fs.existsSync(path.join(dataset, '_versions'))) {
    throw new Refused('NOT_FOUND', `no Lance dataset at ${dataset} (no _versions folder)`);
  }
  checkNewestManifest(dataset);
  const db = await lancedb.connectNamespace('dir', {root: path.dirname(dataset), manifestEnabled: false,
    extraProperties: {dir_listing_enabled: 'true'}});
  return {table: await db.openTable(path.basename(dataset, '.lance'))};
}

function describeIndex(ix) {
  return {name: ix.name, uuid: ix.indexUuid, type: ix.indexType, columns: ix.columns,
    indexed_rows: ix.numIndexedRows ?? null, unindexed_rows: ix.numUnindexedRows ?? null};
}

// What a version holds besides its indexes: an index commit leaves all of it unchanged.
async function dataStats(table) {
  const stats = await table.stats();
  return {rows: Number(stats.numRows), data_bytes: Number(stats.totalBytes),
    fragments: Number(stats.fragmentStats?.numFragments ?? 0)};
}

function describeFields(schema) {
  return schema.fields.map((f) => ({name: f.name, type: String(f.type), nullable: f.nullable}));
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

// Each version from `from` to the newest, as it was: fields, indexes, data statistics.
async function history(table, from) {
  const newest = await table.version();
  const versions = new Set((await table.listVersions()).map((v) => v.version));
  const out = [];
  for (let v = from; v <= newest; ++v) {
    if (!versions.has(v)) {
      out.push({version: v, missing: true});
      continue;
    }
    await table.checkout(v);
    out.push({version: v, fields: describeFields(await table.schema()),
      indexes: (await table.listIndices()).map(describeIndex), data: await dataStats(table)});
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
  const {table} = await open(r.dataset);
  const before = await snapshot(table);
  if (r.op === 'inspect') {
    // An index request being admitted: its type and properties pass the allowlist here too.
    if (r.check_index !== undefined) indexConfig(checkedIndex(r.check_index));
    return before;
  }
  if (r.op === 'history') return history(table, r.from_version);
  await checkVersion(table, r.expected_version);
  await stopAt(r, 'before_commit');
  const existing = before.indexes.find((ix) => ix.name === r.name);
  if (r.op === 'create_index') {
    if (existing && !r.replace) throw new Refused('ALREADY_EXISTS', `index '${r.name}' exists; REPLACE it`);
    const config = indexConfig(r);
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
