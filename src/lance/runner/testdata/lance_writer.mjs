// The tests' own LanceDB writer (never used by Vigil): `create DIR NAME ROWS DIM` makes
// DIR/NAME.lance with id, cat, body and vector columns; `append DIR NAME ROWS DIM` adds
// rows as another writer would. Prints the dataset's version.
import * as lancedb from '@lancedb/lancedb';

const [op, dir, name, rowsText, dimText] = process.argv.slice(2);
const rows = Number(rowsText);
const dim = Number(dimText);
const db = await lancedb.connect(dir);
const start = op === 'append' ? Number(await (await db.openTable(name)).countRows()) : 0;
const data = [];
for (let i = start; i < start + rows; i++) {
  data.push({id: i, cat: 'c' + (i % 7), body: 'row ' + i + (i % 3 ? ' apple' : ' pear'),
    vector: Array.from({length: dim}, (_, j) => Math.sin(i * 0.37 + j))});
}
const table = op === 'append' ? await db.openTable(name) : await db.createTable(name, data, {mode: 'create'});
if (op === 'append') await table.add(data);
console.log(await table.version());
