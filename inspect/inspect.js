// toolproof inspector (docs/inspect.md). Plain DOM: every captured text goes in with textContent
// (el() below never parses HTML), so nothing a model or a client wrote can become markup.

const API = '/inspect/api';
const OUTCOMES = ['clean', 'degraded', 'leak_recovered', 'final_answer', 'retried', 'failed', 'in_flight'];
const main = document.getElementById('main');
const stateEl = document.getElementById('state');
// The sticky header's height is the page's scroll padding: a row `k` selects or a link Shift+Tab
// reaches is scrolled into view below the header, not under it (it hid the selected row). Its
// height changes when it wraps (a phone, a long state line).
new ResizeObserver(([entry]) => {
  const h = entry.target.getBoundingClientRect().height;
  document.documentElement.style.scrollPaddingTop = `${Math.ceil(h)}px`;
}).observe(document.querySelector('body > header'));
let live = true;
let timer = 0;
let selected = 0;
let current = null;
/** Each view's selected row, by its id (a request's or a session's): a live refresh that adds
 * rows above it, or a visit to a request and back, keeps the same request selected. */
const selectedKey = { list: null, sessions: null, session: null };
/** Bumped on every navigation: an answer that arrives after the user went elsewhere is dropped. */
let nav = 0;
/** How many of the page's own navigations lead to this history entry (0: where it was opened). */
let depth = 0;
let routed = false;

/**
 * Characters that change how text reads without showing themselves: bidi controls (an override
 * shows "evil" as "live"), zero-width ones, and the C0 controls but tab and line breaks (a
 * terminal's escape). A captured text is evidence: each is shown as its code point instead.
 */
const INVISIBLE =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const codePoint = (ch) => `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
/** Past this many in one text the rest are written as text: the page's cost stays bounded. */
const MAX_MARKED = 256;

/** A text as nodes, each invisible character shown as its code point (marked, up to MAX_MARKED). */
function textOf(text) {
  INVISIBLE.lastIndex = 0;
  if (!INVISIBLE.test(text)) return [document.createTextNode(text)];
  const out = [];
  let from = 0;
  let marked = 0;
  let plain = '';
  INVISIBLE.lastIndex = 0;
  for (let m = INVISIBLE.exec(text); m; m = INVISIBLE.exec(text)) {
    plain += text.slice(from, m.index);
    from = m.index + 1;
    if (marked >= MAX_MARKED) {
      plain += `⟨${codePoint(m[0])}⟩`;
      continue;
    }
    if (plain) out.push(document.createTextNode(plain));
    plain = '';
    marked++;
    const span = document.createElement('span');
    span.className = 'ctl';
    span.title = `an invisible character, ${codePoint(m[0])}, in the captured text`;
    span.textContent = codePoint(m[0]);
    out.push(span);
  }
  plain += text.slice(from);
  if (plain) out.push(document.createTextNode(plain));
  return out;
}

/** A title's text with the invisible characters written as code points. */
const visible = (text) => text.replace(INVISIBLE, (ch) => `⟨${codePoint(ch)}⟩`);

/** An element with attributes and children; strings become text nodes, never markup. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'style')
      node.style.cssText = v; // CSSOM: allowed under the page's CSP
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'title') node.title = visible(String(v));
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    if (c instanceof Node) node.append(c);
    else node.append(...textOf(String(c)));
  }
  return node;
}

/**
 * The last answer of each list the page polls, with its ETag: asked again with If-None-Match, an
 * answer that did not change comes back as a 304 without a body (an idle proxy's list of 200
 * requests was ~62 KB every 2 s). Kept here, not in the browser's cache (the API says no-store).
 */
const polled = new Map();

/**
 * The server's clock less the reader's, in ms, from the last answer's Date header (a second's
 * resolution): a request's `at` is on the server's clock, which the reader's may not keep.
 */
let skew = 0;
function serverClock(res) {
  const date = Date.parse(res.headers.get('date') ?? '');
  if (Number.isFinite(date)) skew = date + 500 - Date.now();
}

async function getJson(path, poll = false) {
  const held = poll ? polled.get(path) : undefined;
  const headers = { accept: 'application/json' };
  if (held) headers['if-none-match'] = held.etag;
  const res = await fetch(API + path, { headers, cache: 'no-store' });
  serverClock(res);
  if (res.status === 304 && held) return held.data;
  if (!res.ok) {
    // The API's error says what happened in its message: shown as that, not as the JSON around it.
    const text = await res.text();
    let message = text.slice(0, 300);
    try {
      message = JSON.parse(text).error?.message ?? message;
    } catch {}
    const err = new Error(`${res.status}: ${message}`);
    err.status = res.status;
    throw err;
  }
  const data = await res.json();
  const etag = res.headers.get('etag');
  if (poll && etag) {
    // The lists of the views open now: a filter or a page is a path of its own.
    if (polled.size >= 8) polled.clear();
    polled.set(path, { etag, data });
  }
  return data;
}

// One formatter for every time shown: toLocaleTimeString makes one per call (a list of 200 rows
// spent more time there than in building its rows).
const clock = new Intl.DateTimeFormat([], {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});
const time = (ms) => `${clock.format(ms)}.${String(ms % 1000).padStart(3, '0')}`;
/** `1 turn`, `2 turns`: a count and its noun, singular for one. */
const count = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;
/** `1 earlier reply`, `43 earlier replies`: the model's replies a session's first turn held carries. */
const replies = (n) => `${n} earlier ${n === 1 ? 'reply' : 'replies'}`;
const dur = (ms) =>
  ms === null || ms === undefined ? '…' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
const tok = (n) => (n === null || n === undefined ? '–' : String(n));
/** A finished request whose upstream reported no tokens: unknown, never 0 (docs/inspect.md). */
const unreported = (r) =>
  !r.inFlight && r.attempts > 0 && r.tokens.prompt === null && r.tokens.completion === null;
const UNREPORTED = 'not reported by the upstream';
/**
 * Why a finished request's tokens are unknown: a client that left cut the stream before the
 * upstream's usage came (the upstream was not at fault), else the upstream did not report them.
 */
const whyUnreported = (r) =>
  r.status === 'aborted' ? 'the client left before the upstream reported them' : UNREPORTED;
/**
 * One count of a finished request the upstream left out while it reported others: vLLM reports no
 * cached tokens without --enable-prompt-tokens-details. Read '?' (unknown), as a request whose
 * tokens are all unknown reads; '–' is a request in flight only.
 */
const CACHED_UNREPORTED =
  'not reported by the upstream (vLLM reports cached tokens with --enable-prompt-tokens-details)';
const countUnreported = (r, n) => n === null && !r.inFlight && r.attempts > 0;
const tokOf = (r, n) => (countUnreported(r, n) ? '?' : tok(n));
/** A cell of a request's token count: '?' when the upstream did not report it. */
const tokCell = (r, n) =>
  unreported(r)
    ? el('td', { class: 'num', title: whyUnreported(r) }, '?')
    : countUnreported(r, n)
      ? el('td', { class: 'num', title: CACHED_UNREPORTED }, '?')
      : el('td', { class: 'num' }, tok(n));
const badge = (o) => el('span', { class: `badge o-${o}`, 'data-outcome': o }, o.replace('_', ' '));
/** Every kind of a request, the outcome first (a retried request whose call leaked is both). */
const badges = (r) => (r.kinds?.length ? r.kinds : [r.outcome]).map(badge);
/** A long session label shortened in its middle: its end (a run's mark) tells runs apart. */
const shortSession = (s) => (s.length > 30 ? `${s.slice(0, 12)}…${s.slice(-17)}` : s);

/** A base64 run this long (an image's, a PDF's bytes) is shown by its start, length and hash. */
const LONG_BASE64 = 256;

/**
 * A request's text with each long base64 run folded: a screenshot in a request was 100,000s of
 * characters of wrapped noise in its body and its diff. Folded to its first 40 characters, how
 * many more and a hash of the whole run, so two different images of one size still differ in a
 * diff (PNGs of one size share their first 50 or so). One pass over the characters (a regex of
 * `{256,}` tries every start of a shorter run again: quadratic). Copy as curl keeps it whole.
 */
function foldBase64(text) {
  let out = '';
  let from = 0;
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0;
    // A-Z, a-z, 0-9, + and /: a run goes on (its = padding stays after the fold).
    if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47) {
      if (start < 0) start = i;
      continue;
    }
    if (start >= 0 && i - start >= LONG_BASE64) {
      let h = 0x811c9dc5;
      for (let k = start; k < i; k++) h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
      const hash = (h >>> 0).toString(16).padStart(8, '0');
      out += `${text.slice(from, start + 40)}… (${i - start - 40} more base64 characters, #${hash})`;
      from = i;
    }
    start = -1;
  }
  return from === 0 ? text : out + text.slice(from);
}

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

/** The query of the page's address, after its hash's `?` (a view's state: filters, an attempt). */
const hashParams = () => new URLSearchParams(location.hash.slice(1).split('?')[1] || '');

/**
 * The address with `key` set in its query (removed when `value` is empty), in place: the entry's
 * history state (its depth) kept, no new entry and no route. A pick made in a view (an attempt)
 * survives a reload, Back and Forward, and a copied link shows it.
 */
function setHashParam(key, value) {
  const [path] = (location.hash.slice(1) || '/').split('?');
  const q = hashParams();
  if (value) q.set(key, value);
  else q.delete(key);
  history.replaceState(history.state, '', `#${path}${q.toString() ? `?${q}` : ''}`);
}

function route() {
  clearTimeout(timer);
  nav++;
  // An entry of this page's own keeps its depth (going back to it); a new one is one deeper than
  // the entry it came from, so Escape knows whether going back stays on the page.
  const state = history.state;
  if (state && typeof state.depth === 'number') depth = state.depth;
  else {
    depth = routed ? depth + 1 : 0;
    history.replaceState({ depth }, '');
  }
  routed = true;
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

/**
 * A request or a session the reader went to, just drawn: the focus at the view's start, so that
 * Tab goes on to its first link (a request's session). The link or row that led here is gone with
 * the view before, and from the page's body Tab went to the header first: Enter there, meant for
 * the session link, went back to the list.
 */
function focusView() {
  const a = document.activeElement;
  if (a === null || a === document.body || !a.isConnected) main.focus({ preventScroll: true });
}

// ---- the list --------------------------------------------------------------------------------

const FILTERS = ['session', 'model', 'outcome'];

/**
 * The list's selected request on each of its pages (its filters, `before` and `limit`): `]` starts
 * an older page at its first row and Back returns to the row it left. A page of its own kept the
 * row index of the page before: `j` to the bottom of the newest 200, then `]`, selected the older
 * page's last row, 199 `k` away from where the reader went on.
 */
const listSelected = new Map();
let listPage = null;
const pageKeyOf = (filters, before, limit) => JSON.stringify([filters, before, limit]);

/** Goes to another page of the list: its selection as the reader left it, or its first row. */
function enterListPage(key) {
  if (key === listPage) return;
  if (listPage !== null) listSelected.set(listPage, selectedKey.list);
  if (listSelected.size > 32) listSelected.delete(listSelected.keys().next().value);
  selectedKey.list = listSelected.get(key) ?? null;
  selected = 0;
  listPage = key;
}

function showList(params) {
  current = 'list';
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || '']));
  // An older page of the list (`before` its newest request's time); a filter goes to the newest.
  let before = /^[0-9]{1,15}$/.test(params.get('before') || '') ? params.get('before') : '';
  // A page's length, when a link asks for one (the API's 1 to 1000; its default 200).
  const limit = /^(?:[1-9][0-9]{0,2}|1000)$/.test(params.get('limit') || '') ? params.get('limit') : '';
  let shown = '';
  enterListPage(pageKeyOf(filters, before, limit));
  // A filter changes the address in place (a link to the filtered list; Back leaves the list)
  // and reloads the rows only: the filter bar is not made again, so the field or the select the
  // reader is in keeps its focus (arrow keys through the outcomes, one change after another).
  const apply = () => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    if (limit) q.set('limit', limit);
    history.replaceState({ depth }, '', `#/${q.toString() ? `?${q}` : ''}`);
    before = '';
    selected = 0;
    selectedKey.list = null;
    listPage = pageKeyOf(filters, before, limit);
    shown = '';
    load();
  };
  const input = (name, placeholder) =>
    el('input', {
      type: 'search',
      name,
      placeholder,
      value: filters[name],
      list: `${name}-choices`,
      autocomplete: 'off',
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
  // The filters match a session or a model exactly: offer the ones captured.
  const sessionChoices = el('datalist', { id: 'session-choices' });
  const modelChoices = el('datalist', { id: 'model-choices' });
  // Asked after the list, never beside it: with TOOLPROOF_WORKERS > 1 the primary relays one
  // question a reader at a time, and the second of two at once was a 429 ("could not load").
  let choicesAsked = false;
  const fillChoices = () =>
    getJson('/sessions', true)
      .then((data) => {
        const models = [...new Set(data.sessions.flatMap((s) => s.models))].sort();
        sessionChoices.replaceChildren(...data.sessions.map((s) => el('option', { value: s.session })));
        modelChoices.replaceChildren(...models.map((m) => el('option', { value: m })));
      })
      .catch(() => {});
  const body = el('tbody');
  const pager = el('p', { class: 'pager', id: 'pager' });
  // A named key's own view: its requests other keys' traffic pushed out of the shared ring.
  const dropped = el('p', { class: 'note', id: 'dropped', hidden: true });
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
  // An id in hand (the `x-request-id` header, a log line's `reqId`, a span's
  // `toolproof.request_id`) opens that request, whether this page of the list shows it or not.
  const find = el(
    'form',
    {
      class: 'find',
      role: 'search',
      onsubmit: (e) => {
        e.preventDefault();
        const id = e.target.elements.id.value.trim();
        if (id) location.hash = `#/r/${encodeURIComponent(id)}`;
      },
    },
    el('input', {
      type: 'search',
      name: 'id',
      placeholder: 'request id',
      'aria-label': 'request id (x-request-id)',
      autocomplete: 'off',
      spellcheck: 'false',
      maxlength: '200',
    }),
  );
  main.replaceChildren(
    el(
      'div',
      { class: 'filters' },
      input('session', 'session'),
      input('model', 'model'),
      outcome,
      el('label', {}, liveBox, ' live'),
      find,
      sessionChoices,
      modelChoices,
    ),
    dropped,
    el('div', { class: 'scroll' }, table),
    pager,
  );
  const my = nav;
  const load = async () => {
    clearTimeout(timer);
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, v);
    if (limit) q.set('limit', limit);
    const pageQuery = new URLSearchParams(q);
    if (before) pageQuery.set('before', before);
    try {
      const data = await getJson(`/requests?${pageQuery}`, true);
      if (my !== nav) return;
      // Rows made again only when something changed: a link the reader is on keeps its focus.
      const text = JSON.stringify(data.requests) + data.older;
      if (text !== shown) {
        shown = text;
        renderRows(body, data, Object.values(filters).some(Boolean) || Boolean(before));
        renderPager(pager, data, q, before);
      }
      renderDropped(dropped, data.droppedForOthers);
      tickRunning();
      const older = data.older ? ` · ${data.older} older` : '';
      setState(
        `${count(data.requests.length, 'request')}${before ? ` before ${time(Number(before))}` : ''}${older} · ${count(data.workers, 'worker')}${data.partial ? ' (this worker only)' : ''}${data.capture ? '' : ' · capture is off'}`,
      );
    } catch (err) {
      if (my !== nav) return;
      setState(`could not load: ${err.message}`);
    }
    if (!choicesAsked && my === nav) {
      choicesAsked = true;
      await fillChoices();
    }
    if (live && my === nav) timer = setTimeout(load, 2000);
  };
  if (findAsked) {
    findAsked = false;
    find.elements.id.focus();
  }
  load();
}

/**
 * Links to the newest requests and to the next older page: the list shows at most 200 (the
 * API's default page), and a full ring holds thousands. A link, so Back returns to the page before.
 */
function renderPager(pager, data, filters, before) {
  const link = (b, text, rel) => {
    const q = new URLSearchParams(filters);
    if (b) q.set('before', b);
    return el('a', { href: `#/${q.toString() ? `?${q}` : ''}`, rel }, text);
  };
  const last = data.requests[data.requests.length - 1];
  pager.replaceChildren(
    ...[
      before ? link('', '← newest requests', 'first') : null,
      data.older && last ? link(String(last.at), `older requests (${data.older}) →`, 'next') : null,
    ].filter(Boolean),
  );
}

/** How many of the reader's requests were dropped for other keys', said above the list. */
function renderDropped(p, d) {
  p.hidden = !d?.records;
  if (!d?.records) return;
  const n = d.records;
  p.textContent = `${n} of your earlier request${n === 1 ? ' was' : 's were'} dropped from the capture to make room for other keys' requests (the newest of them from ${time(d.newest)}): the ring (TOOLPROOF_CAPTURE_MB) is shared fairly by every key, and yours held the most of it.`;
}

function renderRows(body, data, filtered) {
  if (data.requests.length === 0) {
    selected = 0;
    body.replaceChildren(
      el(
        'tr',
        {},
        el(
          'td',
          { colspan: 11, class: 'empty' },
          !data.capture
            ? 'Capture is off (TOOLPROOF_CAPTURE_MB=0).'
            : data.droppedForOthers?.records && !filtered
              ? 'None of your requests is in the capture now (dropped: see above).'
              : filtered
                ? ['No requests match these filters. ', el('a', { href: '#/' }, 'Show all requests')]
                : 'No requests captured yet.',
        ),
      ),
    );
    return;
  }
  // The selection stays on its request while newer ones arrive above it.
  const at = data.requests.findIndex((r) => r.id === selectedKey.list);
  selected = at >= 0 ? at : Math.min(selected, data.requests.length - 1);
  selectedKey.list = data.requests[selected].id;
  // So does the focus, on the same link of the same row.
  const focused = body.contains(document.activeElement) ? document.activeElement : null;
  const focusRow = focused?.closest('tr')?.dataset.id;
  const focusLink = focused ? [...focused.closest('tr').querySelectorAll('a')].indexOf(focused) : -1;
  // A row whose request did not change is kept as it is: a live refresh of a busy server makes
  // only the newer rows (and those that ended), not all 200 again every 2 s.
  const old = rowCache.get(body) ?? new Map();
  const rows = new Map();
  const trs = data.requests.map((r, i) => {
    const json = JSON.stringify(r);
    const kept = old.get(r.id);
    const tr = kept?.json === json ? kept.tr : requestRow(r);
    tr.setAttribute('aria-selected', i === selected ? 'true' : 'false');
    rows.set(r.id, { json, tr });
    return tr;
  });
  rowCache.set(body, rows);
  body.replaceChildren(...trs);
  if (focusRow !== undefined) {
    const tr = [...body.rows].find((t) => t.dataset.id === focusRow);
    (tr?.querySelectorAll('a')[focusLink] ?? main).focus({ preventScroll: true });
  }
}

/** Each list body's rows by request id, with the summary each was made from. */
const rowCache = new WeakMap();

/**
 * How long a request has taken: its duration once it ended; in flight, how long it has run so
 * far by the server's clock (the answers' Date header), in whole seconds, as that clock reads.
 */
const took = (r) => (r.inFlight ? soFar(r.at) : dur(r.durationMs));
const soFar = (at) => `${Math.max(0, Math.floor((Date.now() + skew - at) / 1000))} s so far`;
/** A duration that runs (`data-since`: its request's `at`), for tickRunning to keep current. */
const tookEl = (tag, attrs, r) => el(tag, r.inFlight ? { ...attrs, 'data-since': r.at } : attrs, took(r));
/** Every running duration shown, read again: each list refresh, a 304 (nothing new) included. */
function tickRunning() {
  for (const e of main.querySelectorAll('[data-since]')) e.textContent = soFar(Number(e.dataset.since));
}

/** One request's row of the list. */
function requestRow(r) {
  return el(
    'tr',
    {
      'data-id': r.id,
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
    el('td', { class: 'outcome' }, badges(r)),
    el('td', { class: 'num' }, String(r.attempts)),
    tokCell(r, r.tokens.cached),
    tokCell(r, r.tokens.prompt),
    tokCell(r, r.tokens.completion),
    tookEl('td', { class: 'num' }, r),
  );
}

const rowsShown = () => [...document.querySelectorAll('tbody tr[data-id], tbody tr[data-key]')];
const keyOf = (tr) => tr.dataset.id ?? tr.dataset.key;

/** The index of the row to select in a view: the one selected there before, else the first. */
function selectIn(keys) {
  const at = keys.indexOf(selectedKey[current]);
  selected = Math.max(at, 0);
  selectedKey[current] = keys[selected] ?? null;
  return selected;
}

function moveSelection(by) {
  const trs = rowsShown();
  if (trs.length === 0) return;
  selected = Math.max(0, Math.min(trs.length - 1, selected + by));
  selectedKey[current] = keyOf(trs[selected]);
  for (const [i, tr] of trs.entries()) tr.setAttribute('aria-selected', i === selected ? 'true' : 'false');
  trs[selected].scrollIntoView({ block: 'nearest' });
}

// ---- one request -----------------------------------------------------------------------------

/**
 * How many items two sequences (texts or arrays of lines) share at their start, then how many
 * of the rest at their end.
 */
function commonEnds(x, y) {
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (
    tail < x.length - head &&
    tail < y.length - head &&
    x[x.length - 1 - tail] === y[y.length - 1 - tail]
  )
    tail++;
  return [head, tail];
}

/** The part of `raw` that is not in `shown` (common prefix and suffix left out), marked. */
function markedText(raw, shown, label) {
  if (!raw) return [el('span', { class: 'empty' }, '(no text)')];
  const [a, b] = commonEnds(raw, shown);
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

/** While a request is in flight nothing of its answer may have been read yet. */
const NOTHING_YET = '(in flight: no text yet)';

/**
 * `partial`: the text so far of a request in flight (the API's `partial` texts): shown as it is,
 * nothing marked (what the model wrote and the client has not received yet is still coming, or
 * held back until the stream decides it), and said in the heading.
 */
/**
 * Which choice an attempt served, when the client's choices were asked one request each: ' ·
 * choice k', or ' · every choice' for one that asked them all (refused, then split); '' otherwise.
 */
function choiceLabel(v, i) {
  const choices = v.attemptChoice ?? [];
  if (!choices.some((c) => c !== null)) return '';
  return choices[i] === null || choices[i] === undefined ? ' · every choice' : ` · choice ${choices[i]}`;
}

/**
 * What the model wrote beside what the client received, for the whole answer (`k` null) or for
 * choice `k` of several: the model's side is attempt `at`'s answer (`wrote`: the whole of it, or
 * its part for choice k), the client's `received`.
 */
function sideBySide(v, k, at, wrote, received, leaked) {
  const r = v.record;
  const choice = k === null ? '' : `choice ${k}: `;
  // The single view's panels are found by id, a choice's by class within its row.
  const side = (name) => (k === null ? { id: name } : { class: name });
  // An earlier attempt of one answer (re-asked, failed): none of its text reached the client, so
  // all of it is marked as what was wrong, its calls too, and its heading says why.
  const fate = wrote && k === null && at < v.modelWrote.length - 1 ? attemptFate(v, at + 1) : null;
  return el(
    'div',
    k === null ? { class: 'cols' } : { class: 'cols', 'data-choice': k },
    wrote
      ? el(
          'div',
          { ...side('model-wrote'), 'data-attempt': at + 1, ...(fate ? { 'data-fate': fate.kind } : {}) },
          textPanel(
            `${choice}model wrote (attempt ${at + 1}, raw)${fate ? ` · ${fate.kind}: ${fate.why}` : ''}`,
            wrote,
            wrote.content,
            fate ? '' : received.content,
            fate ? `${fate.kind}: not passed on` : leaked ? 'recovered call' : 'not passed on as text',
            r.inFlight,
            r.upstreamAttempts[at].response.partial === true,
            fate ? 'invalid' : '',
          ),
          // What toolproof told the model was wrong with it, beside what it wrote.
          fate?.feedback
            ? el('p', { class: 'fate-feedback' }, el('b', {}, 'feedback sent: '), fate.feedback)
            : null,
        )
      : el('div', { class: 'panel empty' }, 'no upstream attempt'),
    el(
      'div',
      side('client-received'),
      textPanel(
        `${choice}client received`,
        received,
        null,
        '',
        '',
        r.inFlight,
        r.clientResponse.body.partial === true,
      ),
    ),
  );
}

/**
 * A request of several choices: one row a choice, what the model wrote for it (the last attempt
 * that served it, or its part of the one answer that held them all) beside what the client
 * received as that choice.
 */
function choicePanels(v, leaked) {
  const choices = v.attemptChoice ?? [];
  const lastAll = v.modelWrote.length - 1;
  return el(
    'div',
    { id: 'choices' },
    v.clientReceived.choices.map((received, k) => {
      const mine = choices.lastIndexOf(k);
      const at = mine >= 0 ? mine : lastAll;
      const wrote =
        at < 0
          ? undefined
          : mine >= 0
            ? v.modelWrote[at]
            : (v.modelWrote[at].choices?.[k] ?? v.modelWrote[at]);
      return sideBySide(v, k, at, wrote, received, leaked);
    }),
  );
}

/**
 * Why attempt `n` (from 1) did not make the answer: re-asked (a corrective retry's feedback
 * decision names the attempt it re-asked, its reason says what was wrong) or failed (its error);
 * null for an attempt that did.
 */
function attemptFate(v, n) {
  const r = v.record;
  const reask = r.decisions.find((d) => d.kind === 'retry-feedback' && d.attempt === n);
  if (reask) {
    let feedback;
    try {
      feedback = JSON.parse(reask.detail ?? 'null')?.feedback;
    } catch {
      feedback = undefined;
    }
    return {
      kind: 're-asked',
      why: reask.reason,
      feedback: typeof feedback === 'string' ? feedback : undefined,
    };
  }
  const error = r.upstreamAttempts[n - 1]?.error;
  return error ? { kind: 'failed', why: error.code } : null;
}

/**
 * The side-by-side view of a request of one choice: the attempt that made the answer (the last)
 * beside what the client received, and, when there were several attempts, a button an attempt
 * to see what the model wrote in each: the first, re-asked call is what a user looks for.
 */
function attemptSides(v, client, leaked) {
  const last = v.modelWrote.length - 1;
  const view = (at) => sideBySide(v, null, at, v.modelWrote[at], client, leaked);
  // The attempt the reader picked, from the address (`#/r/<id>?attempt=N`): a refresh of a request
  // in flight, a reload, Back and a shared link show it, not the last attempt again. One not there
  // (yet: a link to an attempt still to come) is the last.
  const asked = Number(hashParams().get('attempt'));
  const shown = Number.isInteger(asked) && asked >= 1 && asked <= v.modelWrote.length ? asked - 1 : last;
  let cols = view(shown);
  if (v.modelWrote.length < 2) return cols;
  const buttons = v.modelWrote.map((_, at) => {
    const fate = at < last ? attemptFate(v, at + 1) : null;
    return el(
      'button',
      {
        type: 'button',
        'data-attempt': at + 1,
        'aria-pressed': at === shown ? 'true' : 'false',
        class: fate ? `fate-${fate.kind}` : '',
        onclick: () => {
          setHashParam('attempt', String(at + 1));
          for (const b of buttons) b.setAttribute('aria-pressed', b === buttons[at] ? 'true' : 'false');
          const next = view(at);
          cols.replaceWith(next);
          cols = next;
        },
      },
      `attempt ${at + 1}${fate ? ` · ${fate.kind}` : ' · answered'}`,
    );
  });
  return el(
    'div',
    {},
    el(
      'div',
      { id: 'attempt-pick', role: 'group', 'aria-label': 'model wrote in attempt' },
      'model wrote in: ',
      buttons,
    ),
    cols,
  );
}

function textPanel(title, r, raw, shown, markLabel, inFlight, partial, callClass) {
  const empty = !r.content && !r.reasoning && r.calls.length === 0 && !r.error;
  const heading = partial ? `${title} · so far` : title;
  return el(
    'section',
    { class: 'panel', 'aria-label': title },
    el('h3', {}, heading),
    r.reasoning
      ? el(
          'details',
          { 'data-view': `reasoning ${title}` },
          el('summary', {}, 'reasoning'),
          el('pre', {}, r.reasoning),
        )
      : null,
    inFlight && empty
      ? el('pre', { class: 'text empty' }, NOTHING_YET)
      : el(
          'pre',
          { class: 'text' },
          ...(raw === null ? [r.content || ''] : markedText(raw, partial ? raw : shown, markLabel)),
        ),
    r.calls.length ? el('h3', {}, callClass ? `tool calls (${markLabel})` : 'tool calls') : null,
    callsOf(r.calls, callClass),
    r.error ? el('p', { class: 'error' }, `error: ${r.error}`) : null,
    finishLine(r),
  );
}

/** How an answer ended (the API's `finish`): the body's own reasons, else who ended it. */
const FINISH_WORDS = {
  client_closed: 'the client left: cancelled',
  early_stop: 'cut off by toolproof',
  error: 'failed before the end',
};
function finishLine(r) {
  if (!r.finish?.length) return null;
  return el(
    'p',
    { class: 'finish' },
    'finish ',
    r.finish.flatMap((f, i) => [
      i > 0 ? ', ' : '',
      el(
        'b',
        { title: FINISH_WORDS[f] ?? 'as the body says' },
        FINISH_WORDS[f] ? `${f} (${FINISH_WORDS[f]})` : f,
      ),
    ]),
  );
}

/** An attempt's trace and span ids, each with a button that copies it (the API's `traces`). */
function traceIds(t) {
  if (!t) return null;
  const id = (label, cls, value) => [
    `${label} `,
    el('code', { class: cls }, value),
    el(
      'button',
      {
        type: 'button',
        class: 'copy-id',
        'aria-label': `copy ${label} id`,
        onclick: (e) => copy(value, e.target),
      },
      'copy',
    ),
  ];
  return el(
    'span',
    { class: 'trace' },
    ...id('trace', 'trace-id', t.traceId),
    ...(t.spanId ? [' ', ...id('span', 'span-id', t.spanId)] : []),
  );
}

/**
 * The shortest edit script of two arrays of lines (Myers' algorithm: time and memory grow with
 * the lines times the edits, not with the lines squared, so an agent's 1,000-line request with a
 * few rewrites diffs as those rewrites). Null when it would keep more than `budget` numbers.
 */
function editScript(a, b, budget) {
  const n = a.length;
  const m = b.length;
  const off = n + m + 1;
  const v = new Int32Array(2 * off + 1);
  const trace = [];
  for (let d = 0, kept = 0; d <= n + m; d++) {
    kept += v.length;
    if (kept > budget) return null;
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, off);
    }
  }
  return null;
}

function backtrack(trace, a, b, off) {
  const ops = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d];
    const k = x - y;
    const pk = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? k + 1 : k - 1;
    const px = v[off + pk];
    const py = px - pk;
    while (x > px && y > py) {
      x--;
      y--;
      ops.push(['same', a[x]]);
    }
    if (d > 0) {
      if (x === px) ops.push(['add', b[--y]]);
      else ops.push(['del', a[--x]]);
    }
    x = px;
    y = py;
  }
  return ops.reverse();
}

/** A line diff of two texts: the edits with 3 unchanged lines around each, longer runs folded. */
function lineDiff(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  const [head, tail] = commonEnds(x, y);
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const same = (lines) => lines.map((l) => ['same', l]);
  // Past ~4 M numbers (the edits times the lines), every line of the rest as removed and added.
  const middle = editScript(xs, ys, 4_000_000) ?? [
    ...xs.map((l) => ['del', l]),
    ...ys.map((l) => ['add', l]),
  ];
  const ops = [...same(x.slice(0, head)), ...middle, ...same(x.slice(x.length - tail))];
  const out = [];
  for (let i = 0; i < ops.length; ) {
    if (ops[i][0] !== 'same') {
      out.push(ops[i++]);
      continue;
    }
    let j = i;
    while (j < ops.length && ops[j][0] === 'same') j++;
    const run = ops.slice(i, j).map((o) => o[1]);
    if (run.length > 6)
      out.push(
        ['same', run.slice(0, 3).join('\n')],
        ['same', `  … ${run.length - 6} unchanged lines …`],
        ['same', run.slice(-3).join('\n')],
      );
    else out.push(['same', run.join('\n')]);
    i = j;
  }
  const partner = pairChanged(out);
  return el(
    'pre',
    { class: 'diff' },
    out.map(([k, l], i) =>
      el(
        'div',
        { class: k },
        k === 'same' ? `  ${l}` : changedLine(k === 'add' ? '+ ' : '- ', l, partner.get(i)),
      ),
    ),
  );
}

/**
 * In each block of changed lines, the k-th removed line and the k-th added one: the line that
 * replaced it, most often (a system message merged into another, a description rewritten).
 */
function pairChanged(ops) {
  const partner = new Map();
  for (let i = 0; i < ops.length; ) {
    if (ops[i][0] === 'same') {
      i++;
      continue;
    }
    const dels = [];
    const adds = [];
    for (; i < ops.length && ops[i][0] !== 'same'; i++) (ops[i][0] === 'del' ? dels : adds).push(i);
    for (let k = 0; k < Math.min(dels.length, adds.length); k++) {
      partner.set(dels[k], ops[adds[k]][1]);
      partner.set(adds[k], ops[dels[k]][1]);
    }
  }
  return partner;
}

/** Fewer shared characters than this and two lines are told apart whole, not marked. */
const PAIRED_MIN = 40;
/** A run of characters a changed line shares with its pair, past this, is folded to its ends. */
const SAME_RUN = 160;

/** A run `line` shares with its pair: itself, or its ends around how many characters it folds. */
function sameRun(text, atStart) {
  if (text.length <= SAME_RUN) return text;
  // The start of the line (its key) and the characters next to the change stay.
  const [keep1, keep2] = atStart ? [40, 80] : [80, 40];
  return [
    text.slice(0, keep1),
    el('span', { class: 'fold' }, ` … ${text.length - keep1 - keep2} unchanged characters … `),
    text.slice(text.length - keep2),
  ];
}

/**
 * A removed or added line. Beside its pair (`other`), what the two share at their start and end
 * is plain and, when long, folded, and what differs is marked: a change inside one line of
 * 10,000 characters (Claude Code's system prompt, a second one merged into it) was a wall of
 * red and a wall of green with the change nowhere to see.
 */
function changedLine(sign, line, other) {
  if (other === undefined) return `${sign}${line}`;
  let [head, tail] = commonEnds(line, other);
  if (head + tail < PAIRED_MIN) return `${sign}${line}`;
  // Never half of a surrogate pair on either side of the mark.
  if (head > 0 && /[\udc00-\udfff]/.test(line[head] ?? '')) head--;
  if (tail > 0 && /[\udc00-\udfff]/.test(line[line.length - tail] ?? '')) tail--;
  const mid = line.slice(head, line.length - tail);
  return [
    sign,
    sameRun(line.slice(0, head), true),
    mid ? el('mark', { class: 'changed' }, mid) : null,
    sameRun(line.slice(line.length - tail), false),
  ].flat();
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

/**
 * An attempt's request as sent, diffed against its base, with what changed counted in its heading
 * and opened when something did: the attempt toolproof rewrote (a retry's feedback, the forced
 * tool) is the one shown, not an unchanged first one. Without a base, the first is opened.
 */
function sentDetails(a, i, base, diffBase, prev) {
  const diff = base === null ? null : lineDiff(foldBase64(pretty(base)), foldBase64(pretty(a.request.text)));
  const added = diff ? diff.querySelectorAll('.add').length : 0;
  const removed = diff ? diff.querySelectorAll('.del').length : 0;
  // An attempt sent again as it was (a stream cut before the answer, each of n choices asked
  // alike) says so and stays closed: a real Claude Code turn resent after a cut showed the same
  // 50-line diff twice, open, for the reader to compare by eye.
  const again =
    prev !== undefined && prev.request.text === a.request.text && prev.request.cut === a.request.cut;
  const changes = !diff
    ? ''
    : added + removed === 0
      ? ' · unchanged'
      : ` · ${added} line${added === 1 ? '' : 's'} added, ${removed} removed`;
  return el(
    'details',
    { open: again ? false : diff ? added + removed > 0 : i === 0, class: 'sent' },
    el(
      'summary',
      {},
      sentSummary(diffBase),
      el('span', { class: 'changes' }, changes),
      again ? el('span', { class: 'same-as' }, ` · the same as attempt ${prev.n}'s`) : null,
    ),
    diff ?? el('pre', {}, foldBase64(pretty(a.request.text))),
  );
}

/** How an answer that had begun (a 2xx) ended instead, by its error's code. */
const BROKEN_OFF = {
  TP_ERR_UPSTREAM_CUT_OFF: 'stream cut',
  TP_ERR_UPSTREAM_TIMEOUT: 'stream stalled',
  TP_ERR_CLIENT_CLOSED: 'client left',
};

/**
 * An attempt's status for its heading: a 2xx that then failed (the upstream cut its stream) says
 * so, "status 200, stream cut", rather than reading as a success above its error.
 */
function attemptStatus(a) {
  const s = `status ${a.status ?? '–'}`;
  if (!a.error || typeof a.status !== 'number' || a.status >= 300) return s;
  return `${s}, ${BROKEN_OFF[a.error.code] ?? 'then failed'}`;
}

/** The copy button now saying "copied", put back to its label after COPIED_MS or the next copy. */
let copied = null;
const COPIED_MS = 2000;

function uncopy() {
  if (!copied) return;
  clearTimeout(copied.timer);
  copied.button.textContent = copied.label;
  copied = null;
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    const label = copied?.button === button ? copied.label : button.textContent;
    uncopy();
    button.textContent = 'copied';
    copied = { button, label, timer: setTimeout(uncopy, COPIED_MS) };
  } catch {
    const area = el('textarea', { readonly: true, rows: 8, cols: 80 }, text);
    button.after(area);
    area.select();
    button.textContent = 'select and copy';
  }
}

/**
 * What the reader made of the view (the sections opened, the focus, the scroll), to put back once
 * it is made again with newer data.
 */
function keepView() {
  // A section that comes and goes as the text grows (a panel's reasoning, once the model wrote
  // some) is found by its name; the others by their place among the rest.
  const details = () => {
    const all = [...main.querySelectorAll('details')];
    return { named: all.filter((d) => d.dataset.view), placed: all.filter((d) => !d.dataset.view) };
  };
  const before = details();
  const named = new Map(before.named.map((d) => [d.dataset.view, d.open]));
  const open = before.placed.map((d) => d.open);
  const focusables = () =>
    [...main.querySelectorAll('a, button, summary')].filter((f) => !f.closest('details[data-view]'));
  const focus = focusables().indexOf(document.activeElement);
  const focusNamed = document.activeElement?.closest?.('details[data-view]')?.dataset.view;
  const y = window.scrollY;
  return () => {
    const after = details();
    for (const d of after.named) if (named.has(d.dataset.view)) d.open = named.get(d.dataset.view);
    for (const [i, d] of after.placed.entries()) if (i < open.length) d.open = open[i];
    if (focusNamed !== undefined)
      after.named
        .find((d) => d.dataset.view === focusNamed)
        ?.querySelector('summary')
        ?.focus({ preventScroll: true });
    else if (focus >= 0) focusables()[focus]?.focus({ preventScroll: true });
    window.scrollTo(0, y);
  };
}

/** The last answer read of one request, whole: an in-flight refresh asks only for what changed. */
let held = null;

/**
 * One request's answer. A refresh of the one held asks `after` its cursor: each long text comes
 * as what was added to it (docs/inspect.md, the API), put back after the held copy's start here.
 */
async function requestView(id, refresh) {
  const path = `/requests/${encodeURIComponent(id)}`;
  const prev = refresh && held?.id === id ? held.view : null;
  let v = await getJson(prev ? `${path}?after=${encodeURIComponent(prev.cursor)}` : path);
  if (prev) v = withHeld(prev, v) ?? (await getJson(path));
  held = { id, view: v };
  return v;
}

/** `next` with each text of its delta completed from `prev`; null when one is not there. */
function withHeld(prev, next) {
  for (const [path, keep] of Object.entries(next.delta ?? {})) {
    const keys = path.split('.');
    let from = prev;
    let to = next;
    for (const k of keys.slice(0, -1)) {
      from = from?.[k];
      to = to?.[k];
    }
    const last = keys[keys.length - 1];
    const had = from?.[last];
    if (typeof had !== 'string' || had.length < keep || typeof to?.[last] !== 'string') return null;
    to[last] = had.slice(0, keep) + to[last];
  }
  return next;
}

async function showRequest(id, refresh) {
  current = 'request';
  const my = nav;
  if (!refresh) main.replaceChildren(el('p', {}, 'Loading…'));
  let v;
  try {
    v = await requestView(id, refresh);
  } catch (err) {
    if (my !== nav) return;
    // A request gone from the list: say whether other keys' traffic pushed the reader's out.
    const dropped = el('p', { class: 'note', id: 'dropped', hidden: true });
    // Not the list's count of requests, left over from the view before.
    setState('');
    main.replaceChildren(
      el('p', { class: 'error' }, `Request ${id}: ${err.message}`),
      dropped,
      el('a', { href: '#/' }, 'back'),
    );
    if (err.status === 404)
      getJson('/requests?limit=1')
        .then((data) => my === nav && renderDropped(dropped, data.droppedForOthers))
        .catch(() => {});
    return;
  }
  if (my !== nav) return;
  const r = v.record;
  const leaked = r.decisions.some((d) => d.kind === 'leak');
  const client = v.clientReceived;
  const parts = [
    // The model's name in an isolate of its own: a right-to-left override in it cannot run on
    // over the outcome after it.
    el('h1', {}, `${r.api} · `, el('bdi', {}, r.model), ' · ', badge(r.outcome)),
    el(
      'div',
      { class: 'meta' },
      el('span', {}, 'id ', el('b', { id: 'request-id' }, r.id)),
      el('span', {}, 'at ', el('b', {}, time(r.at))),
      el('span', {}, 'status ', el('b', {}, r.inFlight ? '…' : String(r.status ?? '–'))),
      el('span', {}, 'duration ', tookEl('b', { id: 'duration' }, r)),
      el('span', {}, 'attempts ', el('b', {}, String(r.attempts))),
      el(
        'span',
        {},
        'tokens ',
        el(
          'b',
          {},
          unreported(r)
            ? `unknown (${whyUnreported(r)})`
            : `${tokOf(r, r.tokens.cached)} cached / ${tokOf(r, r.tokens.prompt)} prompt / ${tokOf(r, r.tokens.completion)} completion`,
        ),
      ),
      el(
        'span',
        {},
        'session ',
        el('a', { href: `#/s/${encodeURIComponent(r.session)}` }, shortSession(r.session)),
      ),
      el('span', {}, 'worker ', el('b', {}, String(r.worker))),
      // The trace its attempts are in (one for all): the reader's way into their traces.
      v.traces?.find((t) => t)
        ? el('span', { id: 'request-trace' }, traceIds({ traceId: v.traces.find((t) => t).traceId }))
        : null,
      r.kinds.length > 1 ? el('span', {}, 'also ', r.kinds.slice(1).map(badge)) : null,
      exportLink(`/requests/${encodeURIComponent(r.id)}/export`, 'this request'),
    ),
    r.error
      ? el(
          'p',
          { class: 'error', id: 'request-error' },
          `${r.error.code} (${r.error.status}): ${r.error.message}`,
        )
      : null,
    el('h2', {}, 'What the model wrote, what the client received'),
    client.choices && client.choices.length > 1 ? choicePanels(v, leaked) : attemptSides(v, client, leaked),
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
        el('h3', {}, `attempt ${a.n}${choiceLabel(v, i)} → ${a.replica || a.upstream} · ${attemptStatus(a)}`),
        el(
          'div',
          { class: 'meta' },
          el('span', {}, 'queue ', el('b', {}, dur(a.queueMs))),
          // An attempt that ended without a response (unreachable, refused) had no first byte.
          el(
            'span',
            {},
            'TTFB ',
            el('b', {}, a.ttfbMs == null && a.totalMs != null ? 'none' : dur(a.ttfbMs)),
          ),
          // A stream's first bytes: where the prefill shows (vLLM and llama-server send their
          // headers before reading the prompt, so the TTFB is near 0 on a slow turn too).
          a.stream
            ? el(
                'span',
                { title: "from sending to the stream's first bytes: queue and prefill at the backend" },
                'first chunk ',
                el('b', {}, a.firstChunkMs == null && a.totalMs != null ? 'none' : dur(a.firstChunkMs)),
              )
            : null,
          el('span', {}, 'total ', el('b', {}, dur(a.totalMs))),
          a.stream ? el('span', {}, 'events ', el('b', {}, String(a.events))) : null,
          btn,
          traceIds(v.traces?.[i]),
        ),
        a.error
          ? el(
              'p',
              { class: 'error attempt-error' },
              `${a.error.code} (${a.error.status}): ${a.error.message}`,
            )
          : null,
        sentDetails(a, i, base, v.diffBase, r.upstreamAttempts[i - 1]),
        el(
          'details',
          {},
          el(
            'summary',
            {},
            `response${a.response.partial ? ' so far (in flight)' : ''}${a.response.cut ? ` (cut: ${a.response.cut} characters left out)` : ''}`,
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
      el('pre', {}, foldBase64(pretty(r.clientRequest.body.text))),
    ),
    el(
      'details',
      {},
      el('summary', {}, `response as sent${r.clientResponse.body.partial ? ' so far (in flight)' : ''}`),
      el('pre', {}, r.clientResponse.body.text),
    ),
  ];
  // While in flight the view is made again every second: what the reader opened stays open.
  const restore = refresh ? keepView() : null;
  main.replaceChildren(...parts.flat().filter((p) => p !== null && p !== undefined));
  if (restore) restore();
  else {
    focusView();
    // Its session, opened from here, has this turn selected: the one the reader followed there.
    selectedKey.session = r.id;
  }
  setState(r.inFlight ? 'in flight' : '');
  if (r.inFlight) timer = setTimeout(() => my === nav && showRequest(id, true), 1000);
}

/**
 * A link that downloads a request or a session as one JSON file (the API's export): what this page
 * shows of it, to hand to someone. The browser sends the key it signed in with.
 */
const exportLink = (path, what) =>
  el(
    'a',
    { class: 'export', href: API + path, download: '', title: `${what}, as one JSON file (no credentials)` },
    'download JSON',
  );

// ---- sessions --------------------------------------------------------------------------------

async function showSessions() {
  current = 'sessions';
  const my = nav;
  const data = await getJson('/sessions', true).catch((err) => ({ error: err }));
  if (my !== nav) return;
  if (data.error) return main.replaceChildren(el('p', { class: 'error' }, data.error.message));
  const at = selectIn(data.sessions.map((s) => s.session));
  main.replaceChildren(
    el('h1', {}, 'Sessions'),
    el(
      'div',
      { class: 'scroll' },
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
          data.sessions.length === 0
            ? el('tr', {}, el('td', { colspan: 5, class: 'empty' }, 'No sessions captured yet.'))
            : data.sessions.map((s, i) =>
                el(
                  'tr',
                  {
                    'data-key': s.session,
                    'aria-selected': i === at ? 'true' : 'false',
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
                  el('td', { class: s.failed ? 'num error' : 'num' }, String(s.failed)),
                  el('td', { title: s.models.join(', ') }, s.models.join(', ')),
                ),
              ),
        ),
      ),
    ),
  );
  focusView();
  setState(count(data.sessions.length, 'session'));
}

/**
 * A changed prefix's quoted text with its first character that differs from the other side's
 * marked (the two quotes start at the same distance before the change; a side that only ends
 * earlier has none to mark).
 */
function changeQuote(text, other, side) {
  if (text === '(missing)' || other === '(missing)') return el('code', {}, text);
  let i = 0;
  while (i < text.length && i < other.length && text[i] === other[i]) i++;
  if (i >= text.length) return el('code', {}, text);
  // Never half of a surrogate pair.
  if (i > 0 && /[\udc00-\udfff]/.test(text[i])) i--;
  const n = text.codePointAt(i) > 0xffff ? 2 : 1;
  return el(
    'code',
    {},
    text.slice(0, i),
    el(
      'mark',
      { class: 'first-change', title: `the first character that differs (${side})` },
      text.slice(i, i + n),
    ),
    text.slice(i + n),
  );
}

/** The session answer drawn last: a live refresh that gets the same (a 304) draws nothing. */
let sessionShown = null;
/** The session's newest requests as last listed: a refresh reads the session when they changed. */
let sessionProbe = null;

/**
 * One session's turns, read again every 2 s while live (`l`): an agent still running adds turns
 * and ends the one in flight. It was drawn once, and its user reloaded to see the next turn. A
 * refresh keeps the selected turn, the focus and the scroll; an unchanged answer is a 304.
 */
async function showSession(key, refresh) {
  current = 'session';
  const my = nav;
  const again = () => {
    if (live) timer = setTimeout(() => my === nav && showSession(key, true), 2000);
  };
  if (refresh) {
    // A session's answer carries each turn's prompt (up to the ring's size, relayed whole through
    // the cluster's primary): asked again only when its newest requests changed, which the list
    // tells in a few hundred bytes (a 304 while nothing happened).
    const q = new URLSearchParams({ session: key, limit: '5' });
    const probe = await getJson(`/requests?${q}`, true).catch(() => null);
    if (my !== nav) return;
    if (probe !== null && probe === sessionProbe) return again();
    sessionProbe = probe;
  } else sessionProbe = null;
  const data = await getJson(`/session?key=${encodeURIComponent(key)}`, true).catch((err) => ({
    error: err,
  }));
  if (my !== nav) return;
  if (data.error) {
    if (refresh) return again();
    return main.replaceChildren(el('p', { class: 'error' }, data.error.message));
  }
  if (refresh && data === sessionShown) return again();
  sessionShown = data;
  const restore = refresh ? keepView() : null;
  const at = selectIn(data.turns.map((t) => t.summary.id));
  // The session's first turns gone from the capture (a long agent session in a full ring): said
  // above its turns, which are then not its first ones.
  const earlier = data.turns[0]?.prefix?.earlier;
  // Not main.replaceChildren(..., null): the DOM writes a null child as the text "null" under the
  // heading (el() skips it; the DOM's own methods do not).
  const view = [
    el('h1', {}, 'Session'),
    earlier
      ? el(
          'p',
          { class: 'note', id: 'earlier' },
          `The capture holds the last ${count(data.turns.length, 'turn')} of this session: the first one held carries ${replies(earlier)} of the model, whose turns are not in the capture (dropped from the ring to make room, or made before toolproof started; TOOLPROOF_CAPTURE_MB sets its size).`,
        )
      : null,
    el(
      'div',
      { class: 'meta' },
      el('b', {}, key),
      el('a', { href: `#/?session=${encodeURIComponent(key)}` }, 'its requests'),
      exportLink(
        `/session/export?key=${encodeURIComponent(key)}`,
        'this session: its turns and each request whole',
      ),
    ),
    el(
      'div',
      { class: 'scroll' },
      el(
        'table',
        { id: 'turns' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ['turn', 'time', 'outcome', 'status', 'cached / prompt', 'cached ratio', 'prompt prefix'].map(
              (h) => el('th', {}, h),
            ),
          ),
        ),
        el(
          'tbody',
          {},
          data.turns.length === 0
            ? el(
                'tr',
                {},
                el(
                  'td',
                  { colspan: 7, class: 'empty' },
                  'No request of this session is in the capture (never seen, or dropped from the ring).',
                ),
              )
            : null,
          data.turns.map((t, i) => {
            const s = t.summary;
            const ratio = t.cachedRatio;
            const p = t.prefix;
            // `opens`: a prompt of its own (a side request, or the loop's first turn after one).
            const broken = p !== null && p.kept === false;
            return el(
              'tr',
              {
                'data-id': s.id,
                'aria-selected': i === at ? 'true' : 'false',
                onclick: () => {
                  location.hash = `#/r/${encodeURIComponent(s.id)}`;
                },
              },
              el('td', { class: 'num' }, String(i + 1)),
              el('td', {}, el('a', { href: `#/r/${encodeURIComponent(s.id)}` }, time(s.at))),
              el('td', { class: 'outcome' }, badges(s)),
              el('td', {}, s.inFlight ? '…' : String(s.status)),
              // Unknown tokens read '?' as in the list (the why in its title); '–' is in flight.
              unreported(s)
                ? el('td', { class: 'num', title: whyUnreported(s) }, '? / ?')
                : el(
                    'td',
                    {
                      class: 'num',
                      ...(countUnreported(s, s.tokens.cached) ? { title: CACHED_UNREPORTED } : {}),
                    },
                    `${tokOf(s, s.tokens.cached)} / ${tokOf(s, s.tokens.prompt)}`,
                  ),
              el(
                'td',
                { class: broken ? 'ratio broken' : 'ratio' },
                ratio === null
                  ? // Unknown once the turn ended (the upstream reported no cached tokens), '–' in flight.
                    s.inFlight || s.attempts === 0
                    ? '–'
                    : el('span', { title: s.tokens.cached === null ? CACHED_UNREPORTED : UNREPORTED }, '?')
                  : [
                      // A turn whose prompt changed shows its bar in the error colour: the drop
                      // next to it is the broken cache.
                      el('span', {
                        class: 'bar',
                        style: `width:${Math.round(ratio * 60)}px`,
                        title: broken ? 'the prompt changed: its cache broke here' : null,
                      }),
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
                  : p.earlier
                    ? `continues ${replies(p.earlier)} not in the capture`
                    : p.kept
                      ? 'kept'
                      : p.opens
                        ? 'a prompt of its own (a side request without tools, or the first turn after one)'
                        : el(
                            'span',
                            {
                              class: 'error',
                              title: `byte ${p.offset} of the prompt sent upstream (its tools, then each message, as JSON)`,
                            },
                            // The byte in the part named, where the reader looks for it; the prompt's in the title.
                            `changed in ${p.where} of the prompt sent, at its byte ${p.partOffset ?? p.offset}: `,
                            changeQuote(p.before, p.after, 'before'),
                            ' → ',
                            changeQuote(p.after, p.before, 'after'),
                          ),
              ),
            );
          }),
        ),
      ),
    ),
  ];
  main.replaceChildren(...view.filter((node) => node !== null));
  if (restore) restore();
  else {
    focusView();
    rowsShown()[at]?.scrollIntoView({ block: 'nearest' });
  }
  setState(count(data.turns.length, 'turn'));
  again();
}

// ---- keyboard --------------------------------------------------------------------------------

const keysDialog = document.getElementById('keys');
let pendingG = false;
/** `i` pressed outside the list: the list, when drawn, focuses its request-id field. */
let findAsked = false;
document.addEventListener('keydown', (e) => {
  // The open dialog has the keys (Escape closes it, and only that).
  if (keysDialog.open) return;
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
      // A focused link, button or section heading does its own thing, not the selected row's.
      if (t instanceof Element && t.closest('a, button, summary')) break;
      const tr = document.querySelector('tbody tr[aria-selected="true"]');
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
      // Back where the reader came from (the filtered list, the session), when that was this
      // page; from the list, or a view opened by its link, to the whole list.
      if (current !== 'list' && depth > 0) history.back();
      else location.hash = '#/';
      break;
    case 'g':
      pendingG = true;
      break;
    case 'l': {
      live = !live;
      const box = document.getElementById('live');
      if (box) box.checked = live;
      if (current === 'list' || current === 'session') route();
      break;
    }
    case ']':
    case '[': {
      // The list's next older page, or back to the newest requests.
      const a = document.querySelector(`#pager a[rel=${e.key === ']' ? 'next' : 'first'}]`);
      if (a) a.click();
      break;
    }
    case 'c': {
      const b = document.querySelector('button.curl');
      if (b) b.click();
      break;
    }
    case 'i': {
      // The list's request-id field; from another view, the list's.
      e.preventDefault();
      const f = document.querySelector('form.find input');
      if (f) f.focus();
      else {
        findAsked = true;
        location.hash = '#/';
      }
      break;
    }
    case '?':
      keysDialog.showModal();
      break;
    default:
  }
});
document.getElementById('help').addEventListener('click', () => keysDialog.showModal());
route();
