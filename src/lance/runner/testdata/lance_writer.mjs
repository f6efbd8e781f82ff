// The tests' and benchmark's own LanceDB writer (never used by Vigil): `create DIR NAME
// ROWS DIM [VARIANT]` makes DIR/NAME.lance with id, cat, body and vector columns (written in
// batches of 20,000 rows, one version each after the first), every column NOT NULL and the
// vector's elements Float32 (seed 000 section 2.3's contract); VARIANT `nullable`
// makes every column nullable (LanceDB's default for rows given as objects), `float64` the
// vector's elements Float64, `longname` adds a NOT NULL Utf8 column whose name is 1,100 bytes,
// `nullelements` gives every tenth row's vector a null element.
// The vector's element field is declared non-null here, but Lance keeps no element nullability:
// its schema stores a fixed-size list as one field of logical type `fixed_size_list:float:DIM`,
// and LanceDB reads every such element back as nullable (lance-core's datatypes.rs), so a
// reader learns that the elements are non-null from the data alone (the runner counts nulls).
// `append DIR NAME ROWS DIM` adds rows in one version, as another writer would. `index DIR
// NAME INDEX COLUMN` has LanceDB itself make a BTREE index named INDEX (any text, as an outside
// writer may name one) on COLUMN. Prints the dataset's version.
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';

const [op, dir, name, rowsText, dimText, variant = ''] = process.argv.slice(2);
const rows = Number(rowsText);
const dim = Number(dimText);
const batch = 20000;
const db = await lancedb.connect(dir);
const LONG = 'x'.repeat(1100);

function schemaOf(variant) {
  const nullable = variant === 'nullable';
  const element = variant === 'float64' ? new arrow.Float64() : new arrow.Float32();
  const elementNullable = nullable || variant === 'nullelements';
  const fields = [
    new arrow.Field('id', new arrow.Float64(), nullable),
    new arrow.Field('cat', new arrow.Utf8(), nullable),
    new arrow.Field('body', new arrow.Utf8(), nullable),
    new arrow.Field('vector', new arrow.FixedSizeList(dim, new arrow.Field('item', element, elementNullable)), nullable),
  ];
  if (variant === 'longname') fields.push(new arrow.Field(LONG, new arrow.Utf8(), false));
  return new arrow.Schema(fields);
}

function rowsFrom(start, count, long, nullElements) {
  const data = [];
  for (let i = start; i < start + count; i++) {
    const row = {id: i, cat: 'c' + (i % 7), body: 'row ' + i + (i % 3 ? ' apple' : ' pear'),
      vector: Array.from({length: dim}, (_, j) => (nullElements && i % 10 === 3 && j === 1 ? null :
        Math.sin(i * 0.37 + j)))};
    if (long) row[LONG] = 'l';
    data.push(row);
  }
  return data;
}

let table;
if (op === 'index') {
  // `index DIR NAME INDEX COLUMN`: rowsText is the index's name, dimText its column.
  table = await db.openTable(name);
  await table.createIndex(dimText, {config: lancedb.Index.btree(), name: rowsText});
} else if (op === 'append') {
  table = await db.openTable(name);
  const long = (await table.schema()).fields.some((f) => f.name === LONG);
  await table.add(rowsFrom(Number(await table.countRows()), rows, long));
} else {
  const long = variant === 'longname';
  const nulls = variant === 'nullelements';
  table = await db.createTable(name, rowsFrom(0, Math.min(rows, batch), long, nulls),
    {mode: 'create', schema: schemaOf(variant)});
  for (let start = batch; start < rows; start += batch) {
    await table.add(rowsFrom(start, Math.min(batch, rows - start), long, nulls));
  }
}
console.log(await table.version());
