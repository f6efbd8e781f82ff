// The Vigil web console: jobs and a job's timeline with its actions, and health, drawn
// from the public HTTP API with the user's bearer token (tables.js adds the tables and
// generations views). The token lives in this tab's session
// storage; no request is sent without it, and the console can do nothing the API would
// refuse (it asks the API whether the user may act before it shows an action).
'use strict';

const TOKEN_KEY = 'vigil.console.token';
const LIST_REFRESH_MS = 2000;
const PAGE = 50;

let stopView = () => {};  // stops the current view's live updates

function $(id) { return document.getElementById(id); }

// Builds an element: el('td', {class: 'x'}, 'text', child, ...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// A token handed over in the fragment (#token=...) never reaches a server: it moves to
// session storage and leaves the address bar and the history at once.
function takeTokenFromFragment() {
  const m = /(?:^#|[&?])token=([^&]+)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  let rest = location.hash.replace(/([&?#])token=[^&]+&?/, '$1').replace(/[&?]$/, '');
  if (rest === '#' || rest === '') rest = '#/jobs';
  history.replaceState(null, '', location.pathname + rest);
}

class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || ('HTTP ' + status));
    this.status = status;
    this.problem = problem || {};
  }
}

function randomKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'console-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function headers(extra) {
  const t = token();
  if (!t) throw new ApiError(401, {detail: 'sign in with a token first'});
  return Object.assign({'Authorization': 'Bearer ' + t}, extra || {});
}

// Calls the API; a mutation carries a fresh Idempotency-Key (`keyed` false: a POST of
// read-only SQL, which has no effect to protect). Throws ApiError.
async function api(method, path, body, keyed = method !== 'GET') {
  const extra = {};
  if (body !== undefined) extra['Content-Type'] = 'application/json';
  if (keyed) extra['Idempotency-Key'] = randomKey();
  const r = await fetch(path, {
    method, headers: headers(extra), cache: 'no-store', credentials: 'omit',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { json = null; }
  if (!r.ok) {
    if (r.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    throw new ApiError(r.status, json || {detail: text});
  }
  return json;
}

// Reads a server-sent event stream with the token (EventSource cannot send one); calls
// onEvent(name, data) per event until the stream ends or `signal` aborts.
async function stream(path, signal, onEvent) {
  const r = await fetch(path, {headers: headers(), cache: 'no-store', credentials: 'omit', signal});
  if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, {stream: true});
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const chunk = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of chunk.split('\n')) {
        if (line.startsWith('event: ')) name = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, data.join('\n'));
    }
  }
}

function stateBadge(state) {
  return el('span', {class: 'badge state-' + String(state || '').toLowerCase()}, state || '');
}

// "phase done/total" as a labelled progress bar.
function progressBar(text) {
  const m = /^(.*) (\d+)\/(\d+)$/.exec(text || '');
  if (!m) return text ? el('span', {}, text) : '';
  const done = Number(m[2]);
  const total = Math.max(Number(m[3]), 1);
  return el('span', {class: 'progress'},
    el('progress', {max: total, value: Math.min(done, total), 'aria-label': m[1] + ' progress'}),
    ' ', m[1], ' ', Math.round((100 * done) / total) + '%');
}

function showError(where, err) {
  where.replaceChildren(el('p', {class: 'error', role: 'alert'}, err.message));
}

// Runs `load(stopped)` now and `ms` after each run ends, until the view stops; a 401 leads
// to the sign-in, another failure is shown in `box`. `load` draws only while `stopped()` is
// false. Returns {stop, now}: `now` runs it at once (after an action) in place of the next.
function repeat(box, ms, load) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    clearTimeout(timer);
    try {
      await load(() => stopped);
    } catch (err) {
      if (err.status === 401) return renderSignIn(err.message);
      showError(box, err);
    }
    if (!stopped) timer = setTimeout(run, ms);
  };
  run();
  return {stop: () => { stopped = true; clearTimeout(timer); }, now: run};
}

// ---- Sign-in ----

function renderSignIn(message) {
  stopView();
  $('sign-out').hidden = true;
  $('who').textContent = '';
  const input = el('input', {id: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false'});
  const form = el('form', {class: 'signin'},
    el('h1', {}, 'Sign in'),
    el('p', {class: 'muted'}, 'Paste an API token (vigil init prints the administrator\'s; CREATE USER ... prints a ' +
      'user\'s). It is kept in this tab only.'),
    message ? el('p', {class: 'error', role: 'alert'}, message) : null,
    el('label', {for: 'token'}, 'API token'), input,
    el('button', {type: 'submit'}, 'Sign in'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  });
  $('app').replaceChildren(form);
}

// ---- Jobs ----

function listQuery(params) {
  const q = new URLSearchParams();
  for (const k of ['state', 'database', 'table', 'index', 'after']) {
    if (params.get(k)) q.set(k, params.get(k));
  }
  q.set('limit', String(PAGE));
  return q;
}

// The error a stream's `revoked` event carries: the user lost a right the stream needed.
function revokedError(data) {
  const problem = JSON.parse(data);
  return new ApiError(problem.status, problem);
}

// The job-state vocabulary the server sends (GET /v1/config `job_states`: every state, the
// final ones, those in which a job may hold its fence, those a RESOLVE applies to); the console
// spells no state list of its own. Fetched once; a failed fetch is tried again next time.
let jobStatesPromise = null;
function jobStates() {
  if (!jobStatesPromise) {
    jobStatesPromise = api('GET', '/v1/config').then((c) => c.job_states).catch((err) => {
      jobStatesPromise = null;
      throw err;
    });
  }
  return jobStatesPromise;
}

function renderJobs(params) {
  const state = el('select', {id: 'filter-state', name: 'state'}, el('option', {value: ''}, 'any'));
  const database = el('input', {id: 'filter-database', name: 'database', value: params.get('database') || ''});
  const table = el('input', {id: 'filter-table', name: 'table', value: params.get('table') || ''});
  const filters = el('form', {class: 'filters', 'aria-label': 'Filters'},
    el('label', {for: 'filter-state'}, 'State'), state,
    el('label', {for: 'filter-database'}, 'Database'), database,
    el('label', {for: 'filter-table'}, 'Table'), table,
    el('button', {type: 'submit'}, 'Filter'));
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    if (state.value) q.set('state', state.value);
    if (database.value.trim()) q.set('database', database.value.trim());
    if (table.value.trim()) q.set('table', table.value.trim());
    location.hash = '#/jobs' + (q.toString() ? '?' + q : '');
  });
  const body = el('div', {id: 'jobs-body'}, el('p', {class: 'muted'}, 'Loading jobs...'));
  const live = el('p', {class: 'muted', id: 'jobs-live'});
  $('app').replaceChildren(el('h1', {}, 'Index jobs'), filters, live, body);

  // Follows the listing's event stream; after a failure it falls back to polling.
  const controller = new AbortController();
  let timer = null;
  const show = (page, how) => {
    body.replaceChildren(jobsTable(page.jobs), pager(params, page.next_after));
    live.textContent = 'Updated ' + new Date().toLocaleTimeString() + ' (' + how + ').';
  };
  const poll = async () => {
    try {
      show(await api('GET', '/v1/jobs?' + listQuery(params)), 'refreshed every ' + LIST_REFRESH_MS / 1000 + ' s');
    } catch (err) {
      if (err.status === 401) return renderSignIn(err.message);
      showError(body, err);
    }
    if (!controller.signal.aborted) timer = setTimeout(poll, LIST_REFRESH_MS);
  };
  const follow = () => stream('/v1/jobs/stream?' + listQuery(params), controller.signal, (name, data) => {
    if (name === 'jobs') show(JSON.parse(data), 'live');
    if (name === 'error') throw new ApiError(500, JSON.parse(data));
    if (name === 'revoked') throw revokedError(data);
  }).catch((err) => {
    if (controller.signal.aborted) return;
    if (err.status === 401) return renderSignIn(err.message);
    poll();
  }).then(() => { if (!controller.signal.aborted && timer === null) poll(); });
  // The filter offers the server's states; the listing follows once they are in place.
  jobStates().then((vocabulary) => {
    state.append(...vocabulary.all.map((s) => el('option', {value: s, selected: params.get('state') === s}, s)));
  }).catch(() => {}).then(() => { if (!controller.signal.aborted) follow(); });
  return () => { controller.abort(); clearTimeout(timer); };
}

function jobsTable(jobs) {
  if (!jobs.length) return el('p', {class: 'muted', id: 'no-jobs'}, 'No jobs match.');
  const cols = ['Job', 'Table', 'Index', 'Operation', 'State', 'Progress', 'Outcome', 'Refresh', 'Reconcile',
    'Created'];
  return el('table', {class: 'jobs', id: 'jobs-table'},
    el('thead', {}, el('tr', {}, cols.map((c) => el('th', {scope: 'col'}, c)))),
    el('tbody', {}, jobs.map((j) => el('tr', {'data-job': j.JobId, 'data-state': j.State,
      'data-final': String(j.final)},
      el('td', {}, el('a', {href: '#/jobs/' + j.JobId}, '#' + j.JobId)),
      el('td', {}, j.DatabaseName + '.' + j.TableName),
      el('td', {}, j.IndexName),
      el('td', {}, j.Operation),
      el('td', {}, stateBadge(j.State)),
      el('td', {}, j.State === 'RUNNING' ? progressBar(j.Progress) : ''),
      el('td', {}, j.Outcome),
      el('td', {}, j.RefreshState),
      el('td', {}, j.ReconcileState),
      el('td', {}, j.CreateTime)))));
}

function pager(params, nextAfter) {
  const nav = el('nav', {class: 'pager', 'aria-label': 'Pages'});
  if (params.get('after')) {
    const first = new URLSearchParams(params);
    first.delete('after');
    nav.append(el('a', {href: '#/jobs' + (first.toString() ? '?' + first : '')}, 'First page'));
  }
  if (nextAfter !== null && nextAfter !== undefined) {
    const next = new URLSearchParams(params);
    next.set('after', String(nextAfter));
    nav.append(el('a', {href: '#/jobs?' + next, id: 'next-page'}, 'Next page'));
  }
  return nav;
}

// ---- One job ----

// "2026-12-05 19:35:24.123 KIND by actor (resolution R): note {json}" -> its parts.
function parseEvent(text) {
  const by = text.indexOf(' by ');
  const head = by >= 0 ? text.slice(0, by) : text;
  const space = head.lastIndexOf(' ');
  const time = head.slice(0, space);
  const kind = head.slice(space + 1);
  let rest = by >= 0 ? text.slice(by + 4) : '';
  let detail = null;
  const brace = rest.indexOf(' {');
  if (brace >= 0) {
    try { detail = JSON.parse(rest.slice(brace + 1)); rest = rest.slice(0, brace); } catch (e) { detail = null; }
  }
  const colon = rest.indexOf(': ');
  const actor = colon >= 0 ? rest.slice(0, colon) : rest;
  const note = colon >= 0 ? rest.slice(colon + 2) : '';
  const ms = Date.parse(time.replace(' ', 'T') + (/[zZ]|[+-]\d\d:?\d\d$/.test(time) ? '' : 'Z'));
  return {time, ms, kind, actor, note, detail};
}

function eventGroup(kind) {
  if (/ADMIT/.test(kind)) return 'admitted';
  if (/DISPATCH/.test(kind)) return 'dispatched';
  if (/RESULT|CONCLUDED/.test(kind)) return 'result';
  if (/REFRESH/.test(kind)) return 'refresh';
  if (/WATCH|TERMINATION|FINAL_READ|ATTRIBUT|OBSERV/.test(kind)) return 'reconcile';
  if (/ACK|FORCE|RESOL/.test(kind)) return 'resolution';
  if (/CANCEL/.test(kind)) return 'cancel';
  return 'other';
}

function offset(ms, start) {
  if (!Number.isFinite(ms) || !Number.isFinite(start)) return '';
  const s = (ms - start) / 1000;
  return s < 60 ? '+' + s.toFixed(1) + ' s' : '+' + (s / 60).toFixed(1) + ' min';
}

// The events as a timeline: a rail with one marker per event, spaced by time.
function timeline(events) {
  const parsed = events.map(parseEvent);
  const start = parsed.length ? parsed[0].ms : NaN;
  const span = parsed.length ? Math.max(parsed[parsed.length - 1].ms - start, 1) : 1;
  const axis = el('div', {class: 'axis', 'aria-hidden': 'true'},
    parsed.map((e) => el('span', {class: 'tick g-' + eventGroup(e.kind), title: e.kind,
      'data-left': Number.isFinite(e.ms) ? Math.round((1000 * (e.ms - start)) / span) / 10 : 0})));
  for (const t of axis.children) t.style.left = t.getAttribute('data-left') + '%';
  const list = el('ol', {class: 'timeline', id: 'timeline', 'aria-label': 'Event timeline'},
    parsed.map((e) => {
      const facts = [];
      if (e.detail) {
        for (const k of ['state', 'outcome', 'node', 'attempt_id', 'error_code', 'proof', 'generation', 'version']) {
          if (e.detail[k]) facts.push(k + ' ' + e.detail[k]);
        }
      }
      return el('li', {class: 'event g-' + eventGroup(e.kind), 'data-kind': e.kind},
        el('span', {class: 'when'}, offset(e.ms, start)),
        el('span', {class: 'what'}, el('strong', {}, e.kind), ' by ', e.actor, e.note ? ': ' + e.note : ''),
        facts.length ? el('span', {class: 'facts'}, facts.join(' · ')) : null,
        el('time', {datetime: e.time, class: 'muted'}, e.time));
    }));
  return el('section', {'aria-labelledby': 'timeline-title'}, el('h2', {id: 'timeline-title'}, 'Timeline'), axis, list);
}

function renderJob(id) {
  const box = el('div', {id: 'job'}, el('p', {class: 'muted'}, 'Loading job ' + id + '...'));
  const message = el('p', {id: 'job-message', role: 'status'});
  $('app').replaceChildren(el('p', {}, el('a', {href: '#/jobs'}, '← All jobs')), message, box);
  const controller = new AbortController();
  let current = null;
  let following = false;  // one event stream per view, however often it is redrawn
  const draw = (detail) => {
    current = detail;
    box.replaceChildren(jobView(detail, message, () => refresh()));
  };
  const follow = async () => {
    if (following) return;
    following = true;
    try {
      await stream('/v1/jobs/' + id + '/events', controller.signal, (name, data) => {
        if (name === 'job' || name === 'end') draw(JSON.parse(data));
        if (name === 'revoked') throw revokedError(data);
      });
    } catch (err) {
      if (err.status === 401) return renderSignIn(err.message);
      if (err.name !== 'AbortError') message.textContent = 'Live updates stopped: ' + err.message;
    }
    following = false;
  };
  const refresh = async () => {
    try {
      draw(await api('GET', '/v1/jobs/' + id));
      // The server says when a job can change no more (an OUTCOME_UNKNOWN still can).
      if (!current.settled) follow();
    } catch (err) {
      if (err.status === 401) return renderSignIn(err.message);
      showError(box, err);
    }
  };
  refresh();
  return () => controller.abort();
}

function jobView(detail, message, refresh) {
  const j = detail.job;
  const facts = [['State', stateBadge(j.State)], ['Outcome', j.Outcome], ['Refresh', j.RefreshState],
    ['Reconcile', j.ReconcileState], ['Disposition', j.Disposition], ['Table', j.DatabaseName + '.' + j.TableName],
    ['Index', j.IndexName], ['Operation', j.Operation], ['Node', j.AttemptNode], ['Attempt', j.AttemptId],
    ['Message', j.Message], ['Created', j.CreateTime], ['Finished', j.FinishTime]];
  const dl = el('dl', {class: 'facts'}, facts.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => [el('dt', {}, k), el('dd', {'data-item': k}, v)]));
  const parts = [el('h1', {}, 'Job #' + j.JobId + ' ', stateBadge(j.State)), dl];
  if (j.Progress && j.State === 'RUNNING') parts.push(el('p', {}, progressBar(j.Progress)));
  if (detail.warnings && detail.warnings.length) {
    parts.push(el('ul', {class: 'warnings'}, detail.warnings.map((w) => el('li', {}, w))));
  }
  parts.push(actions(detail, message, refresh));
  parts.push(timeline(detail.events || []));
  return el('article', {}, parts);
}

// The actions the user may take on the job; none without ALTER on its table.
function actions(detail, message, refresh) {
  const j = detail.job;
  const bar = el('div', {class: 'actions', id: 'job-actions'});
  if (!detail.may_alter) {
    bar.append(el('p', {class: 'muted', id: 'read-only'}, 'Read only: acting on this job needs ALTER on ' +
      j.DatabaseName + '.' + j.TableName + '.'));
    return bar;
  }
  const run = async (label, call) => {
    message.textContent = label + '...';
    try {
      await call();
      message.textContent = label + ': done.';
    } catch (err) {
      message.textContent = label + ' refused: ' + err.message;
    }
    refresh();
  };
  if (j.State === 'PENDING') {
    const cancel = el('button', {type: 'button', id: 'cancel-job'}, 'Cancel');
    cancel.addEventListener('click', () => {
      if (confirm('Cancel job #' + j.JobId + '? It has not been dispatched; nothing of it will run.')) {
        run('Cancel', () => api('POST', '/v1/jobs/' + j.JobId + '/cancel'));
      }
    });
    bar.append(cancel);
  }
  // The server says which jobs a RESOLVE applies to and which may still change (job_state.h).
  if (detail.resolvable) {
    const resolve = el('button', {type: 'button', id: 'resolve-job', class: 'danger'}, 'Resolve...');
    resolve.addEventListener('click', () => openResolve(detail, (action, comment) =>
      run('Resolve', () => api('POST', '/v1/jobs/' + j.JobId + '/resolve', {action, comment}))));
    bar.append(resolve);
  }
  if (!detail.final) {
    const wait = el('button', {type: 'button', id: 'wait-job'}, 'Wait 30 s');
    wait.addEventListener('click', () => run('Wait', () => api('POST', '/v1/jobs/' + j.JobId + '/wait?timeout_s=30')));
    bar.append(wait);
  }
  return bar;
}

// The RESOLVE dialog: the chosen action's warnings are shown before it can be confirmed.
function openResolve(detail, submit) {
  const dialog = $('resolve-dialog');
  const form = $('resolve-form');
  const warnings = $('resolve-warnings');
  const showWarnings = () => {
    const action = form.elements.action.value;
    const list = (detail.resolve_warnings && detail.resolve_warnings[action]) || [];
    warnings.replaceChildren(...list.map((w) => el('li', {}, w)));
  };
  $('resolve-title').textContent = 'Resolve job #' + detail.job.JobId;
  $('resolve-error').textContent = '';
  form.reset();
  showWarnings();
  form.onchange = showWarnings;
  $('resolve-cancel').onclick = () => dialog.close();
  form.onsubmit = (ev) => {
    ev.preventDefault();
    const comment = $('resolve-comment').value.trim();
    if (!comment) {
      $('resolve-error').textContent = 'A comment is required: it is kept in the audit.';
      return;
    }
    dialog.close();
    submit(form.elements.action.value, comment);
  };
  dialog.showModal();
}

// ---- Health ----

// Prometheus text -> [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? ([0-9.eE+-]+|NaN|\+Inf)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/(\w+)="([^"]*)"/g)) labels[l[1]] = l[2];
    out.push({name: m[1], labels, value: Number(m[3])});
  }
  return out;
}

function sumOf(metrics, name, match) {
  return metrics.filter((x) => x.name === name && (!match || match(x.labels))).reduce((a, x) => a + x.value, 0);
}

// A latency quantile (seconds) from the request-duration histogram, all routes together.
function quantile(metrics, q) {
  const byLe = new Map();
  for (const x of metrics) {
    if (x.name !== 'vigil_http_request_duration_seconds_bucket') continue;
    byLe.set(x.labels.le, (byLe.get(x.labels.le) || 0) + x.value);
  }
  const les = [...byLe.keys()].sort((a, b) => (a === '+Inf' ? 1 : b === '+Inf' ? -1 : Number(a) - Number(b)));
  const total = byLe.get('+Inf') || 0;
  if (!total) return NaN;
  for (const le of les) if (byLe.get(le) >= q * total) return le === '+Inf' ? Infinity : Number(le);
  return NaN;
}

// A sparkline of `values` as an SVG polyline.
function sparkline(values, label) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 200 40');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const finite = values.filter(Number.isFinite);
  const max = Math.max(...finite, 1e-9);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', '2');
  line.setAttribute('points', values.map((v, i) =>
    (values.length > 1 ? (200 * i) / (values.length - 1) : 0).toFixed(1) + ',' +
    (38 - (36 * (Number.isFinite(v) ? v : 0)) / max).toFixed(1)).join(' '));
  svg.append(line);
  return svg;
}

const HEALTH_SAMPLE_MS = 5000;
// Reconcile states of an OUTCOME_UNKNOWN job the reconciler still has to settle.
const RECONCILE_BACKLOG = new Set(['WATCHING', 'RETRY_PENDING', 'FINAL_READ_PENDING']);
const HEALTH_SAMPLES = 60;

function renderHealth() {
  const box = el('div', {id: 'health'}, el('p', {class: 'muted'}, 'Loading...'));
  $('app').replaceChildren(el('h1', {}, 'Health'), el('p', {class: 'muted'},
    'From GET /metrics and SHOW NODES, sampled every ' + HEALTH_SAMPLE_MS / 1000 + ' s while this page is open.'), box);
  const history = [];
  return repeat(box, HEALTH_SAMPLE_MS, async (stopped) => {
    const r = await fetch('/metrics', {headers: headers(), cache: 'no-store', credentials: 'omit'});
    if (!r.ok) throw new ApiError(r.status, null);
    const m = parseMetrics(await r.text());
    let nodes = null;
    try {
      nodes = (await api('POST', '/v1/sql', {sql: 'SHOW NODES'}, false)).results[0];
    } catch (err) {
      nodes = {error: err.message};
    }
    const now = Date.now();
    const requests = sumOf(m, 'vigil_http_requests_total');
    const prev = history[history.length - 1];
    history.push({
      at: now, requests,
      rate: prev ? (1000 * (requests - prev.requests)) / Math.max(now - prev.at, 1) : NaN,
      p50: quantile(m, 0.5), p99: quantile(m, 0.99),
      running: sumOf(m, 'vigil_index_jobs', (l) => l.state === 'RUNNING'),
      unknown: sumOf(m, 'vigil_index_jobs', (l) => l.state === 'OUTCOME_UNKNOWN'),
      failed: sumOf(m, 'vigil_index_jobs', (l) => l.state === 'FAILED'),
      finished: sumOf(m, 'vigil_index_jobs', (l) => l.state === 'FINISHED'),
      committed: sumOf(m, 'vigil_index_job_outcomes', (l) => l.outcome === 'COMMITTED'),
      notCommitted: sumOf(m, 'vigil_index_job_outcomes', (l) => l.outcome === 'NOT_COMMITTED'),
      attemptsUnknown: sumOf(m, 'vigil_index_job_outcomes', (l) => l.outcome === 'UNKNOWN'),
      backlog: sumOf(m, 'vigil_index_job_reconcile', (l) => RECONCILE_BACKLOG.has(l.state)),
      pins: sumOf(m, 'vigil_version_pins', (l) => l.of === 'pins'),
      pinnedVersions: sumOf(m, 'vigil_version_pins', (l) => l.of === 'versions'),
    });
    if (history.length > HEALTH_SAMPLES) history.shift();
    if (!stopped()) box.replaceChildren(healthView(m, nodes, history));
  }).stop;
}

function healthView(m, nodes, history) {
  const last = history[history.length - 1];
  const ms = (s) => (Number.isFinite(s) ? (1000 * s).toFixed(s < 0.01 ? 1 : 0) + ' ms' : s === Infinity ? '> max' : '-');
  const series = (key) => history.map((h) => h[key]);
  const card = (id, title, value, key) => el('div', {class: 'card', id},
    el('h3', {}, title), el('p', {class: 'value'}, value), key ? sparkline(series(key), title + ' over time') : null);
  const idem = (o) => sumOf(m, 'vigil_idempotency_requests_total', (l) => l.outcome === o);
  const parts = [el('div', {class: 'cards'},
    card('h-backlog', 'Jobs OUTCOME_UNKNOWN (resolved or not)', String(last.unknown), 'unknown'),
    card('h-running', 'Builds running', String(last.running), 'running'),
    card('h-outcomes', 'Finished / failed jobs', last.finished + ' / ' + last.failed, 'failed'),
    card('h-attempts', 'Attempts committed / not committed / unknown',
      last.committed + ' / ' + last.notCommitted + ' / ' + last.attemptsUnknown, 'attemptsUnknown'),
    card('h-reconcile', 'Reconcile backlog (unknown outcomes still examined)', String(last.backlog), 'backlog'),
    card('h-pins', 'Version pins / versions readers hold', last.pins + ' / ' + last.pinnedVersions, 'pins'),
    card('h-rate', 'Requests per second', Number.isFinite(last.rate) ? last.rate.toFixed(1) : '-', 'rate'),
    card('h-latency', 'Request latency p50 / p99', ms(last.p50) + ' / ' + ms(last.p99), 'p99'),
    card('h-idempotency', 'Idempotency reserved / replayed', idem('reserved') + ' / ' + idem('replayed'), null))];
  if (nodes && nodes.rows) {
    const col = (name) => nodes.columns.indexOf(name);
    const leader = nodes.rows.find((r) => r[col('Role')] === 'leader');
    parts.push(el('h2', {}, 'Nodes'), el('p', {id: 'h-leader'}, leader ? 'Leader: ' + leader[col('Node')] +
      ' (lease until ' + leader[col('LeaseExpiresAt')] + ')' : 'No node holds the leader lease.'));
    const shown = ['Node', 'Address', 'Role', 'Alive', 'Draining', 'Capacity', 'RunningAttempts', 'HeartbeatAt'];
    parts.push(el('table', {class: 'jobs', id: 'nodes-table'},
      el('thead', {}, el('tr', {}, shown.map((c) => el('th', {scope: 'col'}, c)))),
      el('tbody', {}, nodes.rows.map((r) => el('tr', {}, shown.map((c) => el('td', {}, r[col(c)])))))));
  } else if (nodes) {
    parts.push(el('p', {class: 'muted', id: 'h-leader'}, 'Nodes: ' + nodes.error));
  }
  return el('div', {}, parts);
}

// ---- Routing ----

async function showWho() {
  try {
    const me = await api('GET', '/v1/me');
    $('who').textContent = me.user + (me.admin ? ' (admin)' : '');
  } catch (err) {
    $('who').textContent = '';
  }
}

function route() {
  takeTokenFromFragment();
  stopView();
  stopView = () => {};
  if (!token()) return renderSignIn();
  $('sign-out').hidden = false;
  showWho();
  const hash = location.hash || '#/jobs';
  const [path, query] = hash.slice(1).split('?');
  const job = /^\/jobs\/(\d+)$/.exec(path);
  const table = /^\/tables\/([^/]+)\/([^/]+)$/.exec(path);
  if (job) {
    stopView = renderJob(job[1]);
  } else if (table) {
    stopView = renderTable(decodeURIComponent(table[1]), decodeURIComponent(table[2]));
  } else if (path === '/tables') {
    stopView = renderTables();
  } else if (path === '/generations') {
    stopView = renderGenerations();
  } else if (path === '/health') {
    stopView = renderHealth();
  } else {
    stopView = renderJobs(new URLSearchParams(query || ''));
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    renderSignIn('Signed out.');
  });
  window.addEventListener('hashchange', route);
  route();
});
