// `vigil bench lance`'s baseline: LanceDB called directly, as a user would, in one Node
// process: connect, open the table, createIndex IVF_PQ (replace) on `vector`. Prints the
// createIndex call's milliseconds. Arguments: RUNNER_DIR DATASET PARTITIONS SUB_VECTORS.
import {createRequire} from 'node:module';
import * as path from 'node:path';
import {pathToFileURL} from 'node:url';

const [runnerDir, dataset, partitions, subVectors] = process.argv.slice(2);
const require = createRequire(path.join(runnerDir, 'package.json'));
const lancedb = await import(pathToFileURL(require.resolve('@lancedb/lancedb')).href);
const db = await lancedb.connect(path.dirname(dataset));
const table = await db.openTable(path.basename(dataset, '.lance'));
const start = performance.now();
await table.createIndex('vector', {name: 'emb_idx', replace: true, config: lancedb.Index.ivfPq(
  {distanceType: 'l2', numPartitions: Number(partitions), numSubVectors: Number(subVectors)})});
console.log(Math.round(performance.now() - start));
