/**
 * Comparison of a live simulator exchange with a recorded llama-server exchange, on what is
 * deterministic: status, error bodies, header presence, JSON key structure, SSE framing and
 * event kinds, id formats, finish reasons. Generated words are not compared.
 */

export interface Recording {
  name: string;
  server_config: string;
  request: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: unknown;
    body_raw?: string;
  };
  status: number | string;
  headers: Record<string, string>;
  body_kind: 'json' | 'sse' | 'text' | string;
  body: unknown;
}

export interface Live {
  status: number;
  headers: Headers;
  text: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Key structure with value kinds; ordered keys; an array by its first element (lengths follow token counts). */
export function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length > 0 ? [shape(value[0])] : [];
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return value === null ? 'null' : typeof value;
}

const IGNORED_HEADERS = new Set(['content-length', 'date', 'process-start-time-unix', 'transfer-encoding']);
const VALUE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'content-type',
  'server',
  'x-accel-buffering',
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-allow-headers',
  'access-control-allow-methods',
]);

export const CHAT_ID = /^chatcmpl-[A-Za-z0-9]{32}$/;
export const CALL_ID = /^[A-Za-z0-9]{32}$/;

function compareHeaders(rec: Recording, live: Live, problems: string[]): void {
  for (const [name, value] of Object.entries(rec.headers)) {
    const key = name.toLowerCase();
    if (IGNORED_HEADERS.has(key)) continue;
    const got = live.headers.get(key);
    if (got === null) problems.push(`header ${name} missing`);
    else if (VALUE_HEADERS.has(key) && got !== value)
      problems.push(`header ${name}: ${JSON.stringify(got)} != ${JSON.stringify(value)}`);
  }
  if (live.status >= 400) {
    if (live.headers.get('connection') !== 'close') problems.push('error without Connection: close');
    if (live.headers.get('keep-alive') !== null) problems.push('error with Keep-Alive');
  }
}

function toolCallProblems(message: Obj, problems: string[]): void {
  const calls = message.tool_calls;
  if (!Array.isArray(calls)) return;
  for (const c of calls) {
    if (!isObj(c) || typeof c.id !== 'string' || !CALL_ID.test(c.id))
      problems.push(`tool call id format: ${JSON.stringify(c)}`);
  }
  if (message.content !== '') problems.push('content beside tool_calls is not ""');
}

function compareJson(rec: Recording, live: Live, problems: string[]): void {
  let got: unknown;
  try {
    got = JSON.parse(live.text);
  } catch {
    problems.push(`body is not JSON: ${live.text.slice(0, 120)}`);
    return;
  }
  const want = rec.body;
  if (isObj(want) && isObj(want.error)) {
    // Error bodies are deterministic: compare them whole, key order included.
    if (JSON.stringify(got) !== JSON.stringify(want))
      problems.push(`error body ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
    return;
  }
  if (JSON.stringify(shape(got)) !== JSON.stringify(shape(want))) {
    problems.push(`JSON shape ${JSON.stringify(shape(got))} != ${JSON.stringify(shape(want))}`);
  }
  if (isObj(want) && isObj(got) && Array.isArray(want.choices) && Array.isArray(got.choices)) {
    if (typeof got.id !== 'string' || !CHAT_ID.test(got.id)) problems.push(`id format ${String(got.id)}`);
    if (got.model !== want.model) problems.push(`model ${String(got.model)} != ${String(want.model)}`);
    const w = want.choices[0] as Obj;
    const g = got.choices[0] as Obj;
    if (w?.finish_reason !== g?.finish_reason)
      problems.push(`finish_reason ${String(g?.finish_reason)} != ${String(w?.finish_reason)}`);
    if (isObj(g?.message)) toolCallProblems(g.message, problems);
    const names = (c: Obj | undefined) =>
      JSON.stringify(
        ((c?.message as Obj | undefined)?.tool_calls as Obj[] | undefined)?.map(
          (t) => (t.function as Obj).name,
        ),
      );
    if (names(g) !== names(w)) problems.push(`tool calls ${names(g)} != ${names(w)}`);
  }
}

type EventKind =
  | 'role'
  | 'content'
  | 'tool-first'
  | 'tool-args'
  | 'finish'
  | 'usage'
  | 'error'
  | 'done'
  | 'other';

function eventKind(payload: unknown): EventKind {
  if (payload === '[DONE]') return 'done';
  if (!isObj(payload)) return 'other';
  if ('error' in payload) return 'error';
  const choices = payload.choices;
  if (Array.isArray(choices) && choices.length === 0) return 'usage';
  const c = Array.isArray(choices) && isObj(choices[0]) ? choices[0] : {};
  if (c.finish_reason !== null && c.finish_reason !== undefined) return 'finish';
  const d = isObj(c.delta) ? c.delta : {};
  if ('role' in d) return 'role';
  if (Array.isArray(d.tool_calls))
    return isObj(d.tool_calls[0]) && 'id' in d.tool_calls[0] ? 'tool-first' : 'tool-args';
  if ('content' in d) return 'content';
  return 'other';
}

export interface SseEvent {
  kind: EventKind;
  payload: unknown;
}

/** Strict framing: every event is exactly `data: <payload>\n\n`, nothing else. */
export function parseSse(text: string, problems: string[]): SseEvent[] {
  if (!text.endsWith('\n\n')) problems.push('stream does not end with a blank line');
  const blocks = text.split('\n\n').filter((b) => b !== '');
  return blocks.map((b) => {
    if (!b.startsWith('data: ') || b.includes('\n'))
      problems.push(`bad SSE block ${JSON.stringify(b.slice(0, 60))}`);
    const data = b.slice(6);
    let payload: unknown = data;
    if (data !== '[DONE]') {
      try {
        payload = JSON.parse(data);
      } catch {
        problems.push(`SSE data is not JSON: ${data.slice(0, 60)}`);
      }
    }
    return { kind: eventKind(payload), payload };
  });
}

function compress(kinds: EventKind[]): string {
  return kinds.filter((k, i) => i === 0 || k !== kinds[i - 1]).join(' ');
}

function compareSse(rec: Recording, live: Live, problems: string[]): void {
  const want = parseSse(String(rec.body), []);
  const got = parseSse(live.text, problems);
  const wantSeq = compress(want.map((e) => e.kind));
  const gotSeq = compress(got.map((e) => e.kind));
  if (wantSeq !== gotSeq) problems.push(`event kinds "${gotSeq}" != "${wantSeq}"`);
  // The first event of each kind must have the recorded key structure.
  for (const kind of new Set(want.map((e) => e.kind))) {
    if (kind === 'content' || kind === 'done') continue;
    const w = want.find((e) => e.kind === kind);
    const g = got.find((e) => e.kind === kind);
    if (!w || !g) continue;
    if (JSON.stringify(shape(g.payload)) !== JSON.stringify(shape(w.payload))) {
      problems.push(
        `${kind} event shape ${JSON.stringify(shape(g.payload))} != ${JSON.stringify(shape(w.payload))}`,
      );
    }
    if (kind === 'error' && JSON.stringify(g.payload) !== JSON.stringify(w.payload))
      problems.push('error event differs');
  }
  for (const e of got) {
    if (!isObj(e.payload)) continue;
    if ('id' in e.payload && (typeof e.payload.id !== 'string' || !CHAT_ID.test(e.payload.id))) {
      problems.push(`chunk id format ${String(e.payload.id)}`);
      break;
    }
    if (e.kind === 'tool-first') {
      const delta = (e.payload.choices as Obj[])[0]?.delta as Obj | undefined;
      const id = (delta?.tool_calls as Obj[] | undefined)?.[0]?.id;
      if (!CALL_ID.test(String(id))) problems.push(`tool call id format ${String(id)}`);
    }
  }
  const finish = (events: SseEvent[]) =>
    events
      .filter((e) => e.kind === 'finish')
      .map((e) => ((e.payload as Obj).choices as Obj[])[0]?.finish_reason)
      .join();
  if (finish(want) !== finish(got)) problems.push(`finish_reason ${finish(got)} != ${finish(want)}`);
}

function compareText(rec: Recording, live: Live, problems: string[]): void {
  const names = (t: string) =>
    t
      .split('\n')
      .filter((l) => l.startsWith('# TYPE '))
      .join('\n');
  if (names(live.text) !== names(String(rec.body))) problems.push('metric names/types differ');
}

export function compareExchange(rec: Recording, live: Live): string[] {
  const problems: string[] = [];
  if (live.status !== rec.status) problems.push(`status ${live.status} != ${String(rec.status)}`);
  compareHeaders(rec, live, problems);
  if (rec.body_kind === 'json') compareJson(rec, live, problems);
  else if (rec.body_kind === 'sse') compareSse(rec, live, problems);
  else compareText(rec, live, problems);
  return problems;
}

/** The model's part of a recorded answer, as a simulator scenario: what it said, called, and where it was cut. */
export function scenarioFromRecording(rec: Recording): unknown | null {
  const body = rec.body;
  if (isObj(body) && isObj(body.error)) {
    // Only model-dependent failures are scripted; request errors must come from the simulator itself.
    const message = String(body.error.message);
    if (message.startsWith('The model produced output')) return { error: { status: rec.status, message } };
    return null;
  }
  let content = '';
  let finish: unknown;
  const calls: Array<{ name: string; arguments: string }> = [];
  let midStream: Obj | null = null;
  if (rec.body_kind === 'json' && isObj(body) && Array.isArray(body.choices)) {
    const choice = body.choices[0] as Obj;
    const message = choice.message as Obj;
    content = typeof message.content === 'string' ? message.content : '';
    finish = choice.finish_reason;
    for (const tc of (message.tool_calls as Obj[] | undefined) ?? []) {
      const fn = tc.function as Obj;
      calls.push({ name: String(fn.name), arguments: String(fn.arguments) });
    }
  } else if (rec.body_kind === 'sse') {
    for (const e of parseSse(String(body), [])) {
      if (!isObj(e.payload)) continue;
      if (e.kind === 'error') midStream = e.payload.error as Obj;
      const c = Array.isArray(e.payload.choices) ? (e.payload.choices[0] as Obj | undefined) : undefined;
      if (!c) continue;
      if (c.finish_reason) finish = c.finish_reason;
      const d = (c.delta as Obj) ?? {};
      if (typeof d.content === 'string') content += d.content;
      for (const tc of (d.tool_calls as Obj[] | undefined) ?? []) {
        const i = Number(tc.index);
        const fn = (tc.function as Obj) ?? {};
        calls[i] ??= { name: '', arguments: '' };
        const call = calls[i] as { name: string; arguments: string };
        if (typeof fn.name === 'string') call.name = fn.name;
        if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      }
    }
  } else {
    return null;
  }
  if (midStream)
    return { raw: content, error: { status: midStream.code, message: midStream.message, midStream: true } };
  const cut = finish === 'length';
  // To end on "length", script a little more than was recorded and cut at the recorded end.
  const total = content.length + calls.reduce((a, c) => a + c.arguments.length, 0);
  const last = calls[calls.length - 1];
  const action: Obj =
    calls.length > 0
      ? {
          call: calls.map((c) => ({
            name: c.name,
            arguments: cut && c === last ? `${c.arguments}~~~` : c.arguments,
          })),
        }
      : { raw: cut ? `${content}~~~` : content };
  if (cut) action.truncateAt = total;
  return action;
}
