// The tests' and benchmark's own LanceDB writer (never used by Vigil): `create DIR NAME
// ROWS DIM` makes DIR/NAME.lance with id, cat, body and vector columns (written in batches
// of 20,000 rows, one version each after the first); `append DIR NAME ROWS DIM` adds rows
// in one version, as another writer would. Prints the dataset's version.
import * as lancedb from '@lancedb/lancedb';

const [op, dir, name, rowsText, dimText] = process.argv.slice(2);
const rows = Number(rowsText);
const dim = Number(dimText);
const batch = 20000;
const db = await lancedb.connect(dir);

function rowsFrom(start, count) {
  const data = [];
  for (let i = start; i < start + count; i++) {
    data.push({id: i, cat: 'c' + (i % 7), body: 'row ' + i + (i % 3 ? ' apple' : ' pear'),
      vector: Array.from({length: dim}, (_, j) => Math.sin(i * 0.37 + j))});
  }
  return data;
}

let table;
if (op === 'append') {
  table = await db.openTable(name);
  await table.add(rowsFrom(Number(await table.countRows()), rows));
} else {
  table = await db.createTable(name, rowsFrom(0, Math.min(rows, batch)), {mode: 'create'});
  for (let start = batch; start < rows; start += batch) await table.add(rowsFrom(start, Math.min(batch, rows - start)));
}
console.log(await table.version());
