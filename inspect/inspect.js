// toolproof inspector (docs/inspect.md). Plain DOM: every captured text goes in with textContent
// (el() below never parses HTML), so nothing a model or a client wrote can become markup.

const API = '/inspect/api';
const OUTCOMES = ['clean', 'leak_recovered', 'final_answer', 'retried', 'failed', 'in_flight'];
const main = document.getElementById('main');
const stateEl = document.getElementById('state');
let live = true;
let timer = 0;
let selected = 0;
let current = null;

/** An element with attributes and children; strings become text nodes, never markup. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'style')
      node.style.cssText = v; // CSSOM: allowed under the page's CSP
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function getJson(path) {
  const res = await fetch(API + path, { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${res.status} ${(await res.text()).slice(0, 200)}`);
  return res.json();
}

const time = (ms) =>
  new Date(ms).toLocaleTimeString([], { hour12: false }) + '.' + String(ms % 1000).padStart(3, '0');
const dur = (ms) =>
  ms === null || ms === undefined ? '…' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
const tok = (n) => (n === null || n === undefined ? '–' : String(n));
/** A finished request whose upstream reported no tokens: unknown, never 0 (docs/inspect.md). */
const unreported = (r) =>
  !r.inFlight && r.attempts > 0 && r.tokens.prompt === null && r.tokens.completion === null;
const UNREPORTED = 'not reported by the upstream';
/** A list cell of a request's token count: '?' when the upstream did not report it. */
const tokCell = (r, n) =>
  unreported(r) ? el('td', { class: 'num', title: UNREPORTED }, '?') : el('td', { class: 'num' }, tok(n));
const badge = (o) => el('span', { class: `badge o-${o}`, 'data-outcome': o }, o.replace('_', ' '));
const shortSession = (s) => (s.length > 40 ? `${s.slice(0, 18)}…${s.slice(-18)}` : s);

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

// ---- routing ---------------------------------------------------------------------------------

/** A hash's part decoded; as it is when it does not decode (a pasted or hand-edited link). */
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function route() {
  clearTimeout(timer);
  const hash = location.hash.slice(1) || '/';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  if (path.startsWith('/r/')) return showRequest(decoded(path.slice(3)));
  if (path === '/sessions') return showSessions();
  if (path.startsWith('/s/')) return showSession(decoded(path.slice(3)));
  return showList(params);
}
window.addEventListener('hashchange', route);

function setState(text) {
  stateEl.textContent = text;
}

// ---- the list --------------------------------------------------------------------------------

function showList(params) {
  current = 'list';
  const filters = {
    session: params.get('session') || '',
    model: params.get('model') || '',
    outcome: params.get('outcome') || '',
  };
  const apply = () => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    location.hash = `#/${q.toString() ? `?${q}` : ''}`;
  };
  const input = (name, placeholder) =>
    el('input', {
      type: 'search',
      name,
      placeholder,
      value: filters[name],
      'aria-label': placeholder,
      onchange: (e) => {
        filters[name] = e.target.value.trim();
        apply();
      },
    });
  const outcome = el(
    'select',
    {
      name: 'outcome',
      'aria-label': 'outcome',
      onchange: (e) => {
        filters.outcome = e.target.value;
        apply();
      },
    },
    el('option', { value: '' }, 'any outcome'),
    OUTCOMES.map((o) => el('option', { value: o, selected: filters.outcome === o }, o.replace('_', ' '))),
  );
  const liveBox = el('input', {
    type: 'checkbox',
    id: 'live',
    checked: live,
    onchange: (e) => {
      live = e.target.checked;
      if (live) load();
    },
  });
  const body = el('tbody');
  const table = el(
    'table',
    { id: 'requests' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        [
          'time',
          'API',
          'model',
          'session',
          'status',
          'outcome',
          'attempts',
          'cached',
          'prompt',
          'completion',
          'duration',
        ].map((h) => el('th', {}, h)),
      ),
    ),
    body,
  );
  main.replaceChildren(
    el(
      'div',
      { class: 'filters' },
      input('session', 'session'),
      input('model', 'model'),
      outcome,
      el('label', {}, liveBox, ' live'),
    ),
    table,
  );
  const load = async () => {
    clearTimeout(timer);
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    try {
      const data = await getJson(`/requests?${q}`);
      if (current !== 'list') return;
      renderRows(body, data);
      setState(
        `${data.requests.length} requests · ${data.workers} worker${data.workers === 1 ? '' : 's'}${data.partial ? ' (this worker only)' : ''}${data.capture ? '' : ' · capture is off'}`,
      );
    } catch (err) {
      setState(`could not load: ${err.message}`);
    }
    if (live && current === 'list') timer = setTimeout(load, 2000);
  };
  load();
}

function renderRows(body, data) {
  selected = Math.min(selected, Math.max(0, data.requests.length - 1));
  if (data.requests.length === 0) {
    body.replaceChildren(
      el(
        'tr',
        {},
        el(
          'td',
          { colspan: 11, class: 'empty' },
          data.capture ? 'No requests captured yet.' : 'Capture is off (TOOLPROOF_CAPTURE_MB=0).',
        ),
      ),
    );
    return;
  }
  body.replaceChildren(
    ...data.requests.map((r, i) =>
      el(
        'tr',
        {
          'data-id': r.id,
          'aria-selected': i === selected ? 'true' : 'false',
          onclick: () => {
            location.hash = `#/r/${encodeURIComponent(r.id)}`;
          },
        },
        el('td', {}, el('a', { href: `#/r/${encodeURIComponent(r.id)}` }, time(r.at))),
        el('td', {}, r.api),
        el('td', { class: 'model', title: r.model }, r.model),
        el(
          'td',
          { class: 'session', title: r.session },
          el(
            'a',
            { href: `#/s/${encodeURIComponent(r.session)}`, onclick: (e) => e.stopPropagation() },
            shortSession(r.session),
          ),
        ),
        el('td', {}, r.inFlight ? '…' : String(r.status)),
        el('td', {}, badge(r.outcome)),
        el('td', { class: 'num' }, String(r.attempts)),
        tokCell(r, r.tokens.cached),
        tokCell(r, r.tokens.prompt),
        tokCell(r, r.tokens.completion),
        el('td', { class: 'num' }, dur(r.durationMs)),
      ),
    ),
  );
}

function moveSelection(by) {
  const trs = [...document.querySelectorAll('tbody tr[data-id], tbody tr[data-key]')];
  if (trs.length === 0) return;
  selected = Math.max(0, Math.min(trs.length - 1, selected + by));
  for (const [i, tr] of trs.entries()) tr.setAttribute('aria-selected', i === selected ? 'true' : 'false');
  trs[selected].scrollIntoView({ block: 'nearest' });
}

// ---- one request -----------------------------------------------------------------------------

/** The part of `raw` that is not in `shown` (common prefix and suffix left out), marked. */
function markedText(raw, shown, label) {
  if (!raw) return [el('span', { class: 'empty' }, '(no text)')];
  let a = 0;
  while (a < raw.length && a < shown.length && raw[a] === shown[a]) a++;
  let b = 0;
  while (
    b < raw.length - a &&
    b < shown.length - a &&
    raw[raw.length - 1 - b] === shown[shown.length - 1 - b]
  )
    b++;
  const mid = raw.slice(a, raw.length - b);
  if (!mid) return [raw];
  return [raw.slice(0, a), el('mark', { class: 'recovered', title: label }, mid), raw.slice(raw.length - b)];
}

function callsOf(calls, cls) {
  return calls.map((c) =>
    el(
      'div',
      { class: `call ${cls || ''}` },
      el('b', {}, c.name || '(unnamed)'),
      ' ',
      el('pre', {}, pretty(c.arguments)),
    ),
  );
}

function textPanel(title, r, raw, shown, markLabel) {
  return el(
    'section',
    { class: 'panel', 'aria-label': title },
    el('h3', {}, title),
    r.reasoning ? el('details', {}, el('summary', {}, 'reasoning'), el('pre', {}, r.reasoning)) : null,
    el('pre', { class: 'text' }, ...(raw === null ? [r.content || ''] : markedText(raw, shown, markLabel))),
    r.calls.length ? el('h3', {}, 'tool calls') : null,
    callsOf(r.calls),
    r.error ? el('p', { class: 'error' }, `error: ${r.error}`) : null,
  );
}

/** A line diff of two texts (common head and tail, then LCS on what is left when small). */
function lineDiff(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (
    tail < x.length - head &&
    tail < y.length - head &&
    x[x.length - 1 - tail] === y[y.length - 1 - tail]
  )
    tail++;
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out = [];
  const ctx = (lines) => {
    if (lines.length > 6)
      out.push(
        ['same', lines.slice(0, 3).join('\n')],
        ['same', `  … ${lines.length - 6} unchanged lines …`],
        ['same', lines.slice(-3).join('\n')],
      );
    else if (lines.length) out.push(['same', lines.join('\n')]);
  };
  ctx(x.slice(0, head));
  if (xs.length * ys.length > 250000) {
    for (const l of xs) out.push(['del', l]);
    for (const l of ys) out.push(['add', l]);
  } else {
    const n = xs.length;
    const m = ys.length;
    const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        t[i][j] = xs[i] === ys[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) {
        out.push(['same', xs[i]]);
        i++;
        j++;
      } else if (j < m && (i === n || t[i][j + 1] >= t[i + 1][j])) {
        out.push(['add', ys[j]]);
        j++;
      } else {
        out.push(['del', xs[i]]);
        i++;
      }
    }
  }
  ctx(x.slice(x.length - tail));
  return el(
    'pre',
    { class: 'diff' },
    out.map(([k, l]) => el('div', { class: k }, `${k === 'add' ? '+ ' : k === 'del' ? '- ' : '  '}${l}`)),
  );
}

/**
 * What an attempt's request is diffed against: the client's request (chat completions), or a
 * Messages or Responses request as translated to chat completions before toolproof's policies
 * (diffed against the client's own body, every line of the attempt would read as added). Null:
 * no base (a body cut at capture); the request is shown whole.
 */
function diffBaseText(base, r) {
  if (!base) return r.clientRequest.body.text;
  return base.against === null ? null : base.text;
}

function sentSummary(base) {
  if (base?.against === 'translated')
    return "request sent, diffed against the client's request translated to chat completions (before toolproof's rewrites)";
  if (base?.against === null) return `request sent (not diffed: ${base.note ?? 'no base'})`;
  return "request sent, diffed against the client's request";
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'copied';
  } catch {
    const area = el('textarea', { readonly: true, rows: 8, cols: 80 }, text);
    button.after(area);
    area.select();
    button.textContent = 'select and copy';
  }
}

async function showRequest(id) {
  current = 'request';
  main.replaceChildren(el('p', {}, 'Loading…'));
  let v;
  try {
    v = await getJson(`/requests/${encodeURIComponent(id)}`);
  } catch (err) {
    main.replaceChildren(
      el('p', { class: 'error' }, `Request ${id}: ${err.message}`),
      el('a', { href: '#/' }, 'back'),
    );
    return;
  }
  const r = v.record;
  const last = v.modelWrote.length - 1;
  const leaked = r.decisions.some((d) => d.kind === 'leak');
  const client = v.clientReceived;
  const shown = client.content;
  const parts = [
    // The model's name in an isolate of its own: a right-to-left override in it cannot run on
    // over the outcome after it.
    el('h1', {}, `${r.api} · `, el('bdi', {}, r.model), ' · ', badge(r.outcome)),
    el(
      'div',
      { class: 'meta' },
      el('span', {}, 'id ', el('b', { id: 'request-id' }, r.id)),
      el('span', {}, 'at ', el('b', {}, time(r.at))),
      el('span', {}, 'status ', el('b', {}, String(r.status))),
      el('span', {}, 'duration ', el('b', {}, dur(r.durationMs))),
      el('span', {}, 'attempts ', el('b', {}, String(r.attempts))),
      el(
        'span',
        {},
        'tokens ',
        el(
          'b',
          {},
          unreported(r)
            ? `unknown (${UNREPORTED})`
            : `${tok(r.tokens.cached)} cached / ${tok(r.tokens.prompt)} prompt / ${tok(r.tokens.completion)} completion`,
        ),
      ),
      el(
        'span',
        {},
        'session ',
        el('a', { href: `#/s/${encodeURIComponent(r.session)}` }, shortSession(r.session)),
      ),
      el('span', {}, 'worker ', el('b', {}, String(r.worker))),
      r.kinds.length > 1 ? el('span', {}, 'also ', r.kinds.slice(1).map(badge)) : null,
    ),
    r.error
      ? el(
          'p',
          { class: 'error', id: 'request-error' },
          `${r.error.code} (${r.error.status}): ${r.error.message}`,
        )
      : null,
    el('h2', {}, 'What the model wrote, what the client received'),
    el(
      'div',
      { class: 'cols' },
      last >= 0
        ? el(
            'div',
            { id: 'model-wrote' },
            textPanel(
              `model wrote (attempt ${last + 1}, raw)`,
              v.modelWrote[last],
              v.modelWrote[last].content,
              shown,
              leaked ? 'recovered call' : 'not passed on as text',
            ),
          )
        : el('div', { class: 'panel empty' }, 'no upstream attempt'),
      el('div', { id: 'client-received' }, textPanel('client received', client, null, '', '')),
    ),
    el('h2', {}, 'Decisions'),
    r.decisions.length === 0
      ? el('p', { class: 'empty' }, 'none: the request went through untouched')
      : el(
          'ol',
          { class: 'timeline', id: 'decisions' },
          r.decisions.map((d) => {
            let detail = null;
            try {
              detail = d.detail ? JSON.parse(d.detail) : null;
            } catch {
              detail = null;
            }
            return el(
              'li',
              { 'data-kind': d.kind },
              // 0: decided before any attempt was sent (a request policy preparing the first).
              el(
                'span',
                { class: 'when' },
                `+${d.atMs} ms · ${d.attempt > 0 ? `attempt ${d.attempt}` : 'before attempt 1'}`,
              ),
              el('b', {}, d.kind),
              d.policy ? ` (${d.policy})` : '',
              ' — ',
              d.reason,
              detail && typeof detail.feedback === 'string'
                ? el(
                    'div',
                    { class: 'feedback' },
                    el('b', {}, 'feedback sent: '),
                    el('span', { class: 'feedback-text' }, detail.feedback),
                  )
                : null,
              d.detail
                ? el('details', {}, el('summary', {}, 'detail'), el('pre', {}, pretty(d.detail)))
                : null,
            );
          }),
        ),
    el('h2', {}, 'Upstream attempts'),
    r.upstreamAttempts.map((a, i) => {
      const base = diffBaseText(v.diffBase, r);
      const btn = el(
        'button',
        { type: 'button', class: 'curl', onclick: (e) => copy(v.curl[i], e.target) },
        'copy as curl',
      );
      return el(
        'section',
        { class: 'attempt panel', 'data-attempt': a.n },
        el('h3', {}, `attempt ${a.n} → ${a.replica || a.upstream} · status ${a.status ?? '–'}`),
        el(
          'div',
          { class: 'meta' },
          el('span', {}, 'queue ', el('b', {}, dur(a.queueMs))),
          el('span', {}, 'TTFB ', el('b', {}, dur(a.ttfbMs))),
          el('span', {}, 'total ', el('b', {}, dur(a.totalMs))),
          a.stream ? el('span', {}, 'events ', el('b', {}, String(a.events))) : null,
          btn,
        ),
        a.error
          ? el(
              'p',
              { class: 'error attempt-error' },
              `${a.error.code} (${a.error.status}): ${a.error.message}`,
            )
          : null,
        el(
          'details',
          { open: i === 0 && r.upstreamAttempts.length > 0, class: 'sent' },
          el('summary', {}, sentSummary(v.diffBase)),
          base === null
            ? el('pre', {}, pretty(a.request.text))
            : lineDiff(pretty(base), pretty(a.request.text)),
        ),
        el(
          'details',
          {},
          el(
            'summary',
            {},
            `response${a.response.cut ? ` (cut: ${a.response.cut} characters left out)` : ''}`,
          ),
          el('pre', {}, a.stream ? a.response.text : pretty(a.response.text)),
        ),
        el('details', {}, el('summary', {}, 'curl'), el('pre', {}, v.curl[i])),
      );
    }),
    el('h2', {}, 'Client'),
    el(
      'details',
      {},
      el('summary', {}, 'request headers (credentials never kept)'),
      el('pre', { id: 'client-headers' }, JSON.stringify(r.clientRequest.headers, null, 2)),
    ),
    el(
      'details',
      {},
      el(
        'summary',
        {},
        `request body${r.clientRequest.body.cut ? ` (cut: ${r.clientRequest.body.cut} left out)` : ''}`,
      ),
      el('pre', {}, pretty(r.clientRequest.body.text)),
    ),
    el('details', {}, el('summary', {}, 'response as sent'), el('pre', {}, r.clientResponse.body.text)),
  ];
  main.replaceChildren(...parts.flat().filter((p) => p !== null && p !== undefined));
  setState(r.inFlight ? 'in flight' : '');
  if (r.inFlight) timer = setTimeout(() => current === 'request' && showRequest(id), 1000);
}

// ---- sessions --------------------------------------------------------------------------------

async function showSessions() {
  current = 'sessions';
  const data = await getJson('/sessions').catch((err) => ({ error: err }));
  if (data.error) return main.replaceChildren(el('p', { class: 'error' }, data.error.message));
  selected = 0;
  main.replaceChildren(
    el('h1', {}, 'Sessions'),
    el(
      'table',
      { id: 'sessions' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ['last', 'session', 'requests', 'failed', 'models'].map((h) => el('th', {}, h)),
        ),
      ),
      el(
        'tbody',
        {},
        data.sessions.map((s, i) =>
          el(
            'tr',
            {
              'data-key': s.session,
              'aria-selected': i === 0 ? 'true' : 'false',
              onclick: () => {
                location.hash = `#/s/${encodeURIComponent(s.session)}`;
              },
            },
            el('td', {}, time(s.last)),
            el(
              'td',
              { class: 'session', title: s.session },
              el('a', { href: `#/s/${encodeURIComponent(s.session)}` }, shortSession(s.session)),
            ),
            el('td', { class: 'num' }, String(s.requests)),
            el('td', { class: 'num' }, String(s.failed)),
            el('td', { title: s.models.join(', ') }, s.models.join(', ')),
          ),
        ),
      ),
    ),
  );
  setState(`${data.sessions.length} sessions`);
}

async function showSession(key) {
  current = 'session';
  const data = await getJson(`/session?key=${encodeURIComponent(key)}`).catch((err) => ({ error: err }));
  if (data.error) return main.replaceChildren(el('p', { class: 'error' }, data.error.message));
  selected = 0;
  main.replaceChildren(
    el('h1', {}, 'Session'),
    el(
      'div',
      { class: 'meta' },
      el('b', {}, key),
      el('a', { href: `#/?session=${encodeURIComponent(key)}` }, 'its requests'),
    ),
    el(
      'table',
      { id: 'turns' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ['turn', 'time', 'outcome', 'status', 'cached / prompt', 'cached ratio', 'prompt prefix'].map((h) =>
            el('th', {}, h),
          ),
        ),
      ),
      el(
        'tbody',
        {},
        data.turns.map((t, i) => {
          const s = t.summary;
          const ratio = t.cachedRatio;
          const p = t.prefix;
          return el(
            'tr',
            {
              'data-id': s.id,
              'aria-selected': i === 0 ? 'true' : 'false',
              onclick: () => {
                location.hash = `#/r/${encodeURIComponent(s.id)}`;
              },
            },
            el('td', { class: 'num' }, String(i + 1)),
            el('td', {}, el('a', { href: `#/r/${encodeURIComponent(s.id)}` }, time(s.at))),
            el('td', {}, badge(s.outcome)),
            el('td', {}, String(s.status)),
            el('td', { class: 'num' }, `${tok(s.tokens.cached)} / ${tok(s.tokens.prompt)}`),
            el(
              'td',
              {},
              ratio === null
                ? '–'
                : [
                    el('span', { class: 'bar', style: `width:${Math.round(ratio * 60)}px` }),
                    `${Math.round(ratio * 100)}%`,
                  ],
            ),
            el(
              'td',
              { class: 'prefix' },
              p === null
                ? i === 0
                  ? 'first turn'
                  : 'unknown (body cut)'
                : p.kept
                  ? 'kept'
                  : el(
                      'span',
                      { class: 'error' },
                      `changed in ${p.where} at byte ${p.offset}: `,
                      el('code', {}, p.before),
                      ' → ',
                      el('code', {}, p.after),
                    ),
            ),
          );
        }),
      ),
    ),
  );
  setState(`${data.turns.length} turns`);
}

// ---- keyboard --------------------------------------------------------------------------------

let pendingG = false;
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement) {
    if (e.key === 'Escape') t.blur();
    return;
  }
  if (e.metaKey || e.ctrlKey || e.altKey) return;
  if (pendingG) {
    pendingG = false;
    if (e.key === 'r') location.hash = '#/';
    if (e.key === 's') location.hash = '#/sessions';
    return;
  }
  switch (e.key) {
    case 'j':
      moveSelection(1);
      break;
    case 'k':
      moveSelection(-1);
      break;
    case 'Enter': {
      const tr = document.querySelectorAll('tbody tr[data-id], tbody tr[data-key]')[selected];
      if (tr) tr.click();
      break;
    }
    case '/': {
      const f = document.querySelector('.filters input');
      if (f) {
        e.preventDefault();
        f.focus();
      }
      break;
    }
    case 'Escape':
      location.hash = '#/';
      break;
    case 'g':
      pendingG = true;
      break;
    case 'l': {
      live = !live;
      const box = document.getElementById('live');
      if (box) box.checked = live;
      if (current === 'list') route();
      break;
    }
    case 'c': {
      const b = document.querySelector('button.curl');
      if (b) b.click();
      break;
    }
    case '?':
      document.getElementById('keys').showModal();
      break;
    default:
  }
});
document.getElementById('help').addEventListener('click', () => document.getElementById('keys').showModal());
route();
