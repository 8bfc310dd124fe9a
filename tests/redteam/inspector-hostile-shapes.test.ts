/**
 * The glass box (docs/inspect.md, docs/tracing.md) against hostile shapes, through the real
 * server on loopback: names of any length that the client or the model picks (the model, a tool
 * name the model made up) are kept by a capture record, and by a span, cut short into strings
 * of their own, never whole or through a slice of the whole (the ring's budget and the span
 * limits are the glass box's only bounds on memory).
 */
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { nodeEntry } from '../support/toolproof-process.js';

const HUGE = 300_000;
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { messages: Array<{ content?: unknown }> };
  const text = String(body.messages[0]?.content ?? '');
  // The model makes up a tool of a 300 KB name (a degenerate repetition loop does).
  if (text === 'invent')
    return sendCompletion(
      res,
      {
        content: null,
        tool_calls: [
          { id: 't1', type: 'function', function: { name: `x${'N'.repeat(HUGE)}`, arguments: '{}' } },
        ],
      },
      'tool_calls',
    );
  return sendCompletion(res, { content: 'fine' });
});

const chat = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const inspect = async (path: string) => {
  const res = await fetch(`${pair.proxy.origin}/inspect/api${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
type Rec = {
  model: string;
  decisions: Array<{ kind: string; reason: string }>;
  harness?: { validationFailures?: string[] };
};

describe('names of any length in a capture record', () => {
  it('a 300 KB model name is kept cut to 256 characters (list, record, filter)', async () => {
    const model = `m-${'M'.repeat(HUGE)}`;
    const res = await chat(
      { model, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-request-id': 'huge-model' },
    );
    await res.text();
    const one = await inspect('/requests/huge-model');
    expect(one.status).toBe(200);
    const record = one.body.record as Rec;
    expect(record.model).toBe(model.slice(0, 256));
    // The list filter (at most 256 characters) finds it by what the record kept.
    const list = await inspect(`/requests?model=${encodeURIComponent(model.slice(0, 256))}`);
    expect((list.body.requests as Array<{ id: string; model: string }>).map((r) => r.id)).toContain(
      'huge-model',
    );
  });

  it("a tool name of 300 KB the model made up: the harness summary and the decision's reason keep a cut", async () => {
    const res = await chat(
      { model: 'm1', messages: [{ role: 'user', content: 'invent' }], tools: [weather] },
      { 'x-request-id': 'invented-tool' },
    );
    await res.text();
    const one = await inspect('/requests/invented-tool');
    expect(one.status).toBe(200);
    const record = one.body.record as Rec;
    const failures = record.harness?.validationFailures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const name of failures) expect(name.length).toBeLessThanOrEqual(256);
    expect(failures[0]).toBe(`x${'N'.repeat(255)}`);
    const validation = record.decisions.filter((d) => d.kind === 'validation-failed');
    expect(validation.length).toBeGreaterThan(0);
    for (const d of validation) expect(d.reason.length).toBeLessThanOrEqual(2000);
  });
});

describe('the inspector API, asked for what is not there', () => {
  it("a client's own 128-character request id is found (past the router's 100-character parameters)", async () => {
    const id = `id-${'x'.repeat(125)}`;
    const res = await chat(
      { model: 'm1', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-request-id': id },
    );
    expect(res.headers.get('x-request-id')).toBe(id);
    await res.text();
    const one = await inspect(`/requests/${id}`);
    expect(one.status).toBe(200);
    expect((one.body.record as { id: string }).id).toBe(id);
  });

  it.each([
    ['GET', '/inspect/api/requests/nope-id'],
    ['GET', `/inspect/api/requests/${'y'.repeat(150)}`],
    ['GET', `/inspect/api/requests/${'y'.repeat(300)}`],
    ['GET', '/inspect/api/requests/a/b'],
    ['GET', '/inspect/api/nope'],
    ['GET', '/inspect/nope.js'],
    ['POST', '/inspect/api/requests'],
    ['DELETE', '/inspect/api/requests/x'],
  ])("%s %s: a 404 in the inspector's shape, nothing relayed upstream", async (method, path) => {
    const before = pair.upstream.requests.length;
    const res = await fetch(`${pair.proxy.origin}${path}`, { method });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error?: { code?: string } };
    expect(body.error?.code).toBe('TP_ERR_NOT_FOUND');
    expect(pair.upstream.requests.length).toBe(before);
  });
});

describe('a request id sent again (a retry, another key)', () => {
  const keys = { alice: 'sk-alice-reuse-000001', bob: 'sk-bob-reuse-0000001' };
  const keyed = proxyInFrontOf((req, res) => sendCompletion(res, { content: `answer ${req.body.length}` }), {
    file: {
      keys: [
        { name: 'alice', key: keys.alice },
        { name: 'bob', key: keys.bob },
      ],
    },
  });
  const send = async (key: string, id: string, text: string) => {
    const res = await fetch(`${keyed.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': id },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: text }] }),
    });
    expect(res.headers.get('x-request-id')).toBe(id);
    await res.text();
  };
  const lookUp = async (key: string, id: string) => {
    const res = await fetch(`${keyed.proxy.origin}/inspect/api/requests/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (res.status !== 200) return res.status;
    const v = (await res.json()) as { record: { key: string; clientRequest: { body: { text: string } } } };
    return `${v.record.key}: ${JSON.parse(v.record.clientRequest.body.text).messages[0].content}`;
  };

  it('the id a client got back finds its newest request, and a key its own', async () => {
    await send(keys.alice, 'retry-1', 'first try');
    await send(keys.alice, 'retry-1', 'second try');
    // Was the first try: the id the client had just got back showed its earlier request.
    expect(await lookUp(keys.alice, 'retry-1')).toBe('alice: second try');
    // Another key sends the same id (its own ids, or alice's guessed): each still finds its own.
    await send(keys.alice, 'shared-7', 'from alice');
    await send(keys.bob, 'shared-7', 'from bob');
    // Bob's was a 404: alice's request held the id, and a key sees only its own.
    expect(await lookUp(keys.bob, 'shared-7')).toBe('bob: from bob');
    expect(await lookUp(keys.alice, 'shared-7')).toBe('alice: from alice');
    // The list holds all four, the earlier ones under a suffixed id.
    const res = await fetch(`${keyed.proxy.origin}/inspect/api/requests`, {
      headers: { authorization: `Bearer ${keys.alice}` },
    });
    const ids = ((await res.json()) as { requests: Array<{ id: string }> }).requests.map((r) => r.id);
    expect(ids.filter((i) => i.startsWith('retry-1'))).toHaveLength(2);
    expect(ids).toContain('retry-1');
  });
});

describe('copy as curl, pasted into a shell', () => {
  // Quotes, command substitutions, backticks, a would-be end of the here-document, escapes of
  // control characters and NUL, non-ASCII, a lone surrogate; and a number toolproof sends as the
  // client wrote it (lossless-json: the container's source text, its newlines included).
  const nasty = [
    "it's $(touch /tmp/toolproof-pwned) `touch /tmp/toolproof-pwned` $HOME \\ $IFS",
    '\nTOOLPROOF_BODY\ntouch /tmp/toolproof-pwned\n',
    'nul \u0000 bell \u0007 esc \u001b[31m del \u007f',
    'é 漢字 \u202e \ud83d\ude00 lone \ud800',
  ];
  // The text as JSON escapes it (a raw control character is no JSON); the rest spelled out.
  const content = JSON.stringify(nasty.join(' | '));
  const raw = `{"model":"m1","messages":[{"role":"user","content":${content}}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"number","maximum":1.0
}}}}}]}`;

  it('runs only curl, and replays the attempt byte for byte', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'curl-replay' },
      body: raw,
    });
    expect(res.status).toBe(200);
    await res.text();
    const sent = pair.upstream.requests.at(-1)!.body;
    const one = await inspect('/requests/curl-replay');
    const curl = (one.body.curl as string[])[0]!;
    const before = pair.upstream.requests.length;
    // bash reads the command as a paste would give it; only curl runs (PATH's own).
    const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const sh = spawn('bash', ['-s'], { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      sh.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      sh.on('close', (code) => resolve({ code, stderr }));
      sh.stdin.end(curl);
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(pair.upstream.requests.length).toBe(before + 1);
    const replayed = pair.upstream.requests.at(-1)!;
    // The here-document ends the body with a newline (JSON's whitespace).
    expect(replayed.body.toString('utf8')).toBe(`${sent.toString('utf8')}\n`);
    expect(replayed.headers.authorization).toBeUndefined();
    expect(replayed.headers['x-request-id']).toBe('curl-replay');
    // The body sent kept the client's own number and its newline (so the test covers one).
    expect(sent.toString('utf8')).toContain('1.0\n');
  });
});

describe('what the glass box keeps beyond its own counts', () => {
  // A child process with --expose-gc (hostile-names-probe.ts), 20 requests whose model name and
  // prompt are 200 KB and whose answer makes up a tool of a 200 KB name, three ways in turn:
  // - capture: a 1 MB ring with 1 KB cuts. Names kept whole (the record's model, the harness
  //   summary's failures) or through a cut that holds its parent (a decision's reason, the
  //   model's metrics label) grew the heap 6-10 MB past the ring's 1 MB;
  // - tracing (http/json, http/protobuf) with the content opt-in and 1 KB attribute values, the
  //   spans waiting in the batch queue: an attribute cut to its limit held its whole value (79 MB
  //   over http/json), the attempt spans' names held every model name (7 MB over protobuf).
  // Cut and copied: the heap grows by about the ring, or the queued spans' 1 KB values.
  // 20 requests, not 40 (a third of the child's ~14 s of CPU less): each of those bugs put back
  // by hand still grew the heap past the 2 MB bound, by 3.8-4.2 MB (a name cut through a slice,
  // in the capture record or a span attribute) and 7.8-8.2 MB (the attempt span's model uncut);
  // clean, 0.1-0.4 MB.
  // The tracing modes warm up with 5 requests, not 20: the process is warm from capture's 20
  // (~1.9 s of the child's ~11 s of CPU less); clean they grew 0.06-0.31 MB either way, and a
  // tracing name cut through a slice put back grew them 4.1 and 4.2 MB after 5.
  it("hostile names grow the heap by about the glass box's own counts, not by the names' size", async () => {
    const probe = fileURLToPath(new URL('./hostile-names-probe.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', ...nodeEntry(probe), 'capture,tracing-json,tracing-proto', '20', '200', '5'],
      { timeout: 150_000, maxBuffer: 1 << 20 },
    );
    type Got = { growthMb: number; ringMb: number; records: number; statuses: number[] };
    const got = JSON.parse(stdout) as Record<'capture' | 'tracing-json' | 'tracing-proto', Got>;
    for (const g of Object.values(got)) expect(g.statuses).toEqual([200]);
    expect(got.capture.ringMb).toBeLessThanOrEqual(1);
    expect(got.capture.records).toBeGreaterThan(5);
    expect(got.capture.growthMb).toBeLessThan(2);
    expect(got['tracing-json'].growthMb).toBeLessThan(2);
    expect(got['tracing-proto'].growthMb).toBeLessThan(2);
  }, 180_000);
});
