// The console's Tables and Generations views: each table's versions over time, its
// logical indexes with their segments, coverage and consistency (with BUILD INDEX when
// rows are uncovered and the user may alter the table), and the generations readers
// still hold with the bytes they keep, next to the orphans VACUUM could reclaim. Drawn
// from the public HTTP API with the user's token (helpers of console.js); charts by
// the vendored uPlot.
'use strict';

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const TABLE_REFRESH_MS = 5000;
const MAX_TABLES = 100;
const CHART_VERSIONS = 500;

function formatBytes(n) {
  if (!Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
  return (i ? n.toFixed(n < 10 ? 1 : 0) : String(n)) + ' ' + units[i];
}

function tablePath(db, table) { return '/v1/databases/' + db + '/tables/' + table; }

// The tables the user may see, the first MAX_TABLES of them: [{db, table}], with `more`
// set when there are others (the views say so; a listing is never cut silently).
async function listTables() {
  const out = [];
  for (const d of (await api('GET', '/v1/databases')).databases) {
    const db = d.Database;
    for (const t of (await api('GET', '/v1/databases/' + db + '/tables')).tables) {
      if (out.length === MAX_TABLES) return Object.assign(out, {more: true});
      out.push({db, table: Object.values(t)[0]});
    }
  }
  return Object.assign(out, {more: false});
}

function moreTablesNote(tables) {
  return tables.more ? el('p', {class: 'warnings', id: 'more-tables'}, 'Only the first ' + MAX_TABLES +
    ' tables are listed; open another by its address, #/tables/<database>/<table>.') : '';
}

// The logical indexes of a table with their segments, through read-only SQL.
async function tableIndexes(db, table) {
  const name = "'" + db + '.' + table + "'";
  const r = await api('POST', '/v1/sql', {sql:
    'SELECT IndexName, Columns, IndexType, RowsIndexed, PhysicalEntryCount FROM vigil_indexes(' + name + ') ' +
    'ORDER BY IndexName; SELECT IndexName, IndexUuid, DatasetVersion, MetadataConsistency FROM ' +
    'vigil_index_entries(' + name + ') ORDER BY IndexName, DatasetVersion', script: true}, false);
  const rows = (res) => res.rows.map((row) => Object.fromEntries(res.columns.map((c, i) => [c, row[i]])));
  const segments = rows(r.results[1]);
  return rows(r.results[0]).map((ix) => Object.assign(ix, {segments: segments.filter((s) => s.IndexName === ix.IndexName)}));
}

// ---- Tables ----

function renderTables() {
  const box = el('div', {id: 'tables'}, el('p', {class: 'muted'}, 'Loading tables...'));
  $('app').replaceChildren(el('h1', {}, 'Tables and indexes'), box);
  let stopped = false;
  (async () => {
    try {
      const tables = await listTables();
      const details = await Promise.all(tables.map((t) => api('GET', tablePath(t.db, t.table))));
      if (stopped) return;
      if (!tables.length) return box.replaceChildren(el('p', {class: 'muted', id: 'no-tables'}, 'No tables.'));
      box.replaceChildren(moreTablesNote(tables), el('table', {class: 'jobs', id: 'tables-table'},
        el('thead', {}, el('tr', {}, ['Table', 'Rows', 'Indexes'].map((c) => el('th', {scope: 'col'}, c)))),
        el('tbody', {}, tables.map((t, i) => el('tr', {'data-table': t.db + '.' + t.table},
          el('td', {}, el('a', {href: '#/tables/' + t.db + '/' + t.table}, t.db + '.' + t.table),
            details[i].engine === 'LANCE' ? el('span', {class: 'muted'}, ' (Lance)') : ''),
          el('td', {}, details[i].row_count),
          el('td', {}, [...new Set(details[i].indexes.map((x) => x.Key_name))].join(', ') || '-'))))));
    } catch (err) {
      if (err.status === 401) return renderSignIn(err.message);
      showError(box, err);
    }
  })();
  return () => { stopped = true; };
}

function renderTable(db, table) {
  if (!NAME.test(db) || !NAME.test(table)) {
    $('app').replaceChildren(el('p', {class: 'error', role: 'alert'}, 'Not a table name: ' + db + '.' + table));
    return () => {};
  }
  const box = el('div', {id: 'table'}, el('p', {class: 'muted'}, 'Loading ' + db + '.' + table + '...'));
  const message = el('p', {id: 'table-message', role: 'status'});
  $('app').replaceChildren(el('p', {}, el('a', {href: '#/tables'}, '← All tables')),
    el('h1', {}, db + '.' + table), message, box);
  const view = repeat(box, TABLE_REFRESH_MS, async (stopped) => {
    const detail = await api('GET', tablePath(db, table));
    const external = detail.engine === 'LANCE';
    // An external table's versions and rows are LanceDB's: only its indexes are Vigil's.
    const [versions, indexes, generations] = await Promise.all([
      external ? null : api('GET', tablePath(db, table) + '/versions?limit=' + CHART_VERSIONS),
      tableIndexes(db, table),
      external ? null : api('GET', tablePath(db, table) + '/generations')]);
    if (stopped()) return;
    const open = new Set(Array.from(box.querySelectorAll('details[open]'), (d) => d.dataset.index));
    box.replaceChildren(
      external ? externalSection(detail) : versionsSection(versions),
      indexesSection(db, table, detail, indexes, message, () => view.now()),
      external ? '' : generationsSection(generations));
    for (const d of box.querySelectorAll('details')) d.open = open.has(d.dataset.index);
  });
  return view.stop;
}

// "YYYY-MM-DD HH:MM:SS.mmm" (UTC) -> Unix seconds.
function utcSeconds(text) { return Date.parse(text.replace(' ', 'T') + 'Z') / 1000; }

function versionsChart(versions) {
  const holder = el('div', {class: 'chart', id: 'versions-chart', role: 'img',
    'aria-label': 'Rows and bytes of the last ' + versions.length + ' versions over time'});
  if (typeof uPlot !== 'function' || !versions.length) return holder;
  // Versions committed within one millisecond are spread a microsecond apart (x must increase).
  const xs = [];
  for (const v of versions) {
    const t = utcSeconds(v.CommitTime);
    xs.push(xs.length && t <= xs[xs.length - 1] ? xs[xs.length - 1] + 1e-6 : t);
  }
  const data = [xs, versions.map((v) => v.Rows), versions.map((v) => v.Bytes), versions.map((v) => v.Fragments)];
  const width = Math.max(Math.min(($('app').clientWidth || 800) - 32, 1100), 280);
  const opts = {
    width, height: 220,
    scales: {x: {time: true}},
    series: [{label: 'Time'},
      {label: 'Rows', scale: 'rows', stroke: '#1f5fbf', width: 2},
      {label: 'Bytes', scale: 'bytes', stroke: '#1d7a3a', width: 2, value: (u, v) => formatBytes(v)},
      {label: 'Fragments', scale: 'rows', stroke: '#9a6700', width: 1, dash: [4, 4]}],
    axes: [{}, {scale: 'rows'}, {scale: 'bytes', side: 1, grid: {show: false},
      values: (u, vals) => vals.map(formatBytes), size: 70}],
  };
  new uPlot(opts, data, holder);  // eslint-disable-line no-new
  return holder;
}

function versionsSection(v) {
  const versions = v.versions;
  const recent = versions.slice(-20).reverse();
  return el('section', {'aria-labelledby': 'versions-title'},
    el('h2', {id: 'versions-title'}, 'Versions over time'),
    el('p', {class: 'muted'}, versions.length + ' version' + (versions.length === 1 ? '' : 's') + ' shown (at most ' +
      CHART_VERSIONS + ', the newest).'),
    versionsChart(versions),
    (v.warnings || []).length ? el('ul', {class: 'warnings'}, v.warnings.map((w) => el('li', {}, w))) : null,
    el('table', {class: 'jobs', id: 'versions-table'},
      el('thead', {}, el('tr', {}, ['Version', 'Committed', 'Operation', 'Job', 'Rows', 'Fragments', 'Bytes']
        .map((c) => el('th', {scope: 'col'}, c)))),
      el('tbody', {}, recent.map((r) => el('tr', {'data-version': r.Version},
        el('td', {}, r.Version), el('td', {}, r.CommitTime), el('td', {}, r.Operation),
        el('td', {}, r.JobId ? el('a', {href: '#/jobs/' + r.JobId}, '#' + r.JobId) : ''),
        el('td', {}, r.Rows), el('td', {}, r.Fragments), el('td', {}, formatBytes(r.Bytes)))))));
}

function externalSection(detail) {
  return el('section', {'aria-labelledby': 'external-title', id: 'external'},
    el('h2', {id: 'external-title'}, 'External Lance table'),
    el('p', {}, 'LanceDB owns this dataset: ', el('code', {}, detail.location), ', version ' + detail.version + ', ' +
      detail.row_count + ' rows. Vigil runs its index jobs; LanceDB reads and writes its rows and versions.'));
}

function consistencyBadge(value) {
  return el('span', {class: 'badge ' + (value === 'CONSISTENT' ? 'state-finished' : 'state-outcome_unknown')}, value);
}

function indexesSection(db, table, detail, indexes, message, reload) {
  const rows = Number(detail.row_count);
  const section = el('section', {'aria-labelledby': 'indexes-title'}, el('h2', {id: 'indexes-title'}, 'Indexes'),
    el('p', {class: 'muted'}, rows + ' live rows.'));
  if (!indexes.length) section.append(el('p', {class: 'muted', id: 'no-indexes'}, 'No index.'));
  for (const ix of indexes) {
    const uncovered = Math.max(rows - Number(ix.RowsIndexed), 0);
    const consistent = ix.segments.every((s) => s.MetadataConsistency === 'CONSISTENT');
    const card = el('div', {class: 'card index', 'data-index': ix.IndexName, 'data-uncovered': uncovered},
      el('h3', {}, ix.IndexName + ' (' + ix.IndexType + ' on ' + ix.Columns + ')'),
      el('p', {class: 'coverage'},
        el('progress', {max: Math.max(rows, 1), value: Math.min(Number(ix.RowsIndexed), rows),
          'aria-label': 'Coverage of ' + ix.IndexName}),
        ' ', ix.RowsIndexed + ' of ' + rows + ' rows indexed',
        uncovered ? el('strong', {class: 'uncovered'}, ', ' + uncovered + ' uncovered (scanned by every query)') : ''),
      el('p', {}, 'Consistency: ', consistencyBadge(consistent ? 'CONSISTENT' : 'CHECK SEGMENTS')),
      el('details', {'data-index': ix.IndexName}, el('summary', {}, ix.segments.length + ' segment' + (ix.segments.length === 1 ? '' : 's')),
        el('ul', {class: 'segments'}, ix.segments.map((s) => el('li', {},
          el('code', {}, s.IndexUuid), s.DatasetVersion === null ? ' ' : ' built at version ' + s.DatasetVersion + ' ',
          consistencyBadge(s.MetadataConsistency))))));
    if (uncovered > 0 && detail.may_alter) card.append(buildButton(db, table, ix.IndexName, message, reload));
    section.append(card);
  }
  if (!detail.may_alter) {
    section.append(el('p', {class: 'muted', id: 'table-read-only'}, 'Read only: BUILD INDEX needs ALTER on ' + db + '.' +
      table + '.'));
  }
  return section;
}

function buildButton(db, table, index, message, reload) {
  const button = el('button', {type: 'button', class: 'build-index', 'data-index': index},
    'Build index ' + index);
  button.addEventListener('click', async () => {
    button.disabled = true;
    message.textContent = 'BUILD INDEX ' + index + '...';
    try {
      const r = await api('POST', tablePath(db, table) + '/indexes/' + index + '/build');
      const job = (r.admitted_jobs || [])[0];
      message.replaceChildren('BUILD INDEX ' + index + ': ',
        job ? el('a', {href: '#/jobs/' + job, id: 'build-job'}, 'job #' + job) : '', job ? ' admitted.' : r.message);
    } catch (err) {
      message.textContent = 'BUILD INDEX ' + index + ' refused: ' + err.message;
    }
    reload();
  });
  return button;
}

function generationsSection(g) {
  const held = g.generations.filter((x) => x.State === 'RETIRED');
  const heldBytes = held.reduce((a, x) => a + x.HeldBytes, 0);
  const orphanBytes = g.orphans.reduce((a, x) => a + x.Bytes, 0);
  return el('section', {'aria-labelledby': 'generations-title'},
    el('h2', {id: 'generations-title'}, 'Generations and leases'),
    el('p', {id: 'generations-summary'}, held.length ?
      held.length + ' older generation' + (held.length === 1 ? '' : 's') + ' still held by readers, keeping ' +
      formatBytes(heldBytes) + ' that VACUUM frees once they move on.' :
      'No reader holds an older generation.'),
    el('table', {class: 'jobs', id: 'generations-table'},
      el('thead', {}, el('tr', {}, ['Version', 'State', 'Readers', 'Processes', 'Rows', 'Bytes', 'Held bytes',
        'Pin expires'].map((c) => el('th', {scope: 'col'}, c)))),
      el('tbody', {}, g.generations.map((x) => el('tr', {'data-version': x.Version, 'data-state': x.State},
        el('td', {}, x.Version), el('td', {}, x.State), el('td', {}, x.Readers), el('td', {}, x.Processes),
        el('td', {}, x.Rows), el('td', {}, formatBytes(x.Bytes)), el('td', {}, formatBytes(x.HeldBytes)),
        el('td', {}, x.PinExpiresAt || ''))))),
    el('h3', {}, 'What VACUUM could reclaim'),
    el('p', {id: 'orphans-summary'}, g.orphans.length ? g.orphans.length + ' orphan' +
      (g.orphans.length === 1 ? '' : 's') + ', ' + formatBytes(orphanBytes) +
      ' (removed once no executor of the table\'s jobs can still write them).' : 'No orphan.'),
    g.orphans.length ? el('table', {class: 'jobs', id: 'orphans-table'},
      el('thead', {}, el('tr', {}, ['Path', 'Reason', 'Bytes'].map((c) => el('th', {scope: 'col'}, c)))),
      el('tbody', {}, g.orphans.map((o) => el('tr', {'data-reason': o.Reason},
        el('td', {}, el('code', {}, o.Path)), el('td', {}, o.Reason), el('td', {}, formatBytes(o.Bytes)))))) : null);
}

// ---- Generations across tables ----

function renderGenerations() {
  const box = el('div', {id: 'generations'}, el('p', {class: 'muted'}, 'Loading...'));
  $('app').replaceChildren(el('h1', {}, 'Generations and leases'), el('p', {class: 'muted'},
    'Per table: the published version, the older versions readers still hold, the bytes only they keep, and the ' +
    'orphans VACUUM could reclaim.'), box);
  return repeat(box, TABLE_REFRESH_MS, async (stopped) => {
    // External Lance tables have no generations of Vigil's: LanceDB serves their readers.
    const listed = await listTables();
    const details = await Promise.all(listed.map((t) => api('GET', tablePath(t.db, t.table))));
    const tables = Object.assign(listed.filter((t, i) => details[i].engine !== 'LANCE'), {more: listed.more});
    const all = await Promise.all(tables.map((t) => api('GET', tablePath(t.db, t.table) + '/generations')));
    if (stopped()) return;
    box.replaceChildren(moreTablesNote(tables), tables.length ? el('table', {class: 'jobs', id: 'all-generations'},
      el('thead', {}, el('tr', {}, ['Table', 'Published', 'Older held', 'Readers', 'Held bytes', 'Orphans']
        .map((c) => el('th', {scope: 'col'}, c)))),
      el('tbody', {}, tables.map((t, i) => {
        const g = all[i].generations;
        const published = g.find((x) => x.State === 'PUBLISHED');
        const older = g.filter((x) => x.State === 'RETIRED');
        return el('tr', {'data-table': t.db + '.' + t.table},
          el('td', {}, el('a', {href: '#/tables/' + t.db + '/' + t.table}, t.db + '.' + t.table)),
          el('td', {}, published ? 'v' + published.Version + ' (' + published.Readers + ' readers)' : '-'),
          el('td', {}, older.length ? older.map((x) => 'v' + x.Version).join(', ') : 'none'),
          el('td', {}, g.reduce((a, x) => a + x.Readers, 0)),
          el('td', {}, formatBytes(older.reduce((a, x) => a + x.HeldBytes, 0))),
          el('td', {}, all[i].orphans.length + ' (' + formatBytes(all[i].orphans.reduce((a, x) => a + x.Bytes, 0)) +
            ')'));
      }))) : el('p', {class: 'muted'}, 'No tables.'));
  }).stop;
}
