/**
 * Routes over real HTTP: an alias glob (Claude Code's changing model names) to a configured
 * model; an ordered fallback list tried before the first byte reaches the client (connection
 * refused, 503, a full admission queue), on every door, in the trace and a counter; no fallback
 * once a byte of the answer went out; the long-context route for a prompt beyond the window.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeUpstream,
  fakeUpstream,
  type Recorded,
  type RunningProxy,
  sendCompletion,
  startProxy,
} from '../../support/harness.js';
import { buildApp } from '../../../server/app.js';
import { loadConfig } from '../../../server/config.js';
import { waitFor } from '../stack.js';
import { logCapture } from '../test-utils.js';

const chunk = (delta: unknown, finish: string | null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'x', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

function answer(tag: string) {
  return (req: Recorded, res: ServerResponse) => {
    const body = JSON.parse(req.body.toString()) as { stream?: boolean; model: string };
    const said = `${tag} as ${body.model}`;
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${chunk({ role: 'assistant', content: said }, null)}${chunk({}, 'stop')}data: [DONE]\n\n`);
      return;
    }
    sendCompletion(
      res,
      { content: said },
      'stop',
      { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
      body.model as string,
    );
  };
}

let backup: FakeUpstream;
let busy: FakeUpstream;
let torn: FakeUpstream;
let long: FakeUpstream;
let main: FakeUpstream;
let forced: FakeUpstream;
let held: FakeUpstream;
const release: Array<() => void> = [];
let proxy: RunningProxy;
let deadUrl: string;

beforeAll(async () => {
  backup = await fakeUpstream(answer('backup'));
  main = await fakeUpstream(answer('main'));
  long = await fakeUpstream(answer('long'));
  forced = await fakeUpstream(answer('forced'));
  // Answers only when the test lets it: its one admission slot stays taken meanwhile.
  held = await fakeUpstream((req, res) => {
    release.push(() => answer('held')(req, res));
  });
  busy = await fakeUpstream((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"busy","type":"server_error"}}');
  });
  // A stream that sends its first words, then the connection dies.
  torn = await fakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: 'first words' }, null));
    setTimeout(() => res.socket?.destroy(), 30);
  });
  // A port nobody listens on: connection refused. Not a port a probe listened on and closed: in a
  // full run another file's server (the worker runs file after file) took that port, and the
  // "refused" model answered (port 9, discard, is what the other refused-upstream tests use).
  deadUrl = 'http://127.0.0.1:9/v1';
  proxy = await startProxy(
    {},
    {
      defaults: { forceToolUse: false, maxRetries: 0 },
      models: {
        main: { upstream: main.url, contextWindow: 200, longContext: 'long-model' },
        'long-model': { upstream: long.url },
        down: { upstream: deadUrl, fallback: ['backup'] },
        busy: { upstream: busy.url, fallback: ['down-too', 'backup'] },
        'down-too': { upstream: deadUrl },
        torn: { upstream: torn.url, fallback: ['backup'] },
        backup: { upstream: backup.url },
        // The fallback runs with its own settings: forced tool use only on the second model.
        'plain-down': { upstream: deadUrl, fallback: ['forced-backup'] },
        'forced-backup': { upstream: forced.url, forceToolUse: true },
        // One slot and no queue: a second request while the first runs finds the queue full.
        full: {
          upstream: held.url,
          admission: { concurrency: 1, queueSize: 0 },
          fallback: ['backup'],
        },
      },
      routes: [{ match: ['claude-*', 'sonnet'], model: 'main' }],
    },
  );
});

afterAll(async () => {
  await proxy.close();
  for (const u of [backup, busy, torn, long, main, forced, held]) await u.close();
});

type Door = 'chat' | 'responses' | 'messages';
function send(door: Door, model: string, text: string, stream = false, tools = false) {
  const path =
    door === 'chat' ? '/v1/chat/completions' : door === 'responses' ? '/v1/responses' : '/v1/messages';
  const params = { type: 'object', properties: { path: { type: 'string' } } };
  const withTools =
    door === 'chat'
      ? { tools: [{ type: 'function', function: { name: 'read', parameters: params } }] }
      : door === 'responses'
        ? { tools: [{ type: 'function', name: 'read', parameters: params }] }
        : { tools: [{ name: 'read', input_schema: params }] };
  const body = {
    ...(door === 'chat'
      ? { model, stream, messages: [{ role: 'user', content: text }] }
      : door === 'responses'
        ? { model, stream, input: text }
        : { model, stream, max_tokens: 50, messages: [{ role: 'user', content: text }] }),
    ...(tools ? withTools : {}),
  };
  return fetch(`${proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

async function counter(from: string, to: string, reason: string): Promise<number> {
  const text = await (await fetch(`${proxy.origin}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) =>
      l.startsWith(`toolproof_route_fallbacks_total{from="${from}",to="${to}",reason="${reason}"}`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('aliases and globs', () => {
  it("Claude Code's changing model names reach the configured model, named as it", async () => {
    const res = await send('messages', 'claude-sonnet-4-5-20990101', 'hi');
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('main as main');
    expect((await send('chat', 'sonnet', 'hi')).status).toBe(200);
    expect((await send('chat', 'gpt-unknown', 'hi')).status).toBe(404);
  });
});

describe.each(['chat', 'responses', 'messages'] as const)('fallback on the %s door', (door) => {
  for (const stream of [false, true]) {
    it(`${stream ? 'streamed' : 'not streamed'}: connection refused, then the next model answers`, async () => {
      const before = await counter('down', 'backup', 'connection');
      const res = await send(door, 'down', 'hi', stream);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('backup as backup');
      expect(await counter('down', 'backup', 'connection')).toBe(before + 1);
    });
  }

  it('a 503, then a refused connection, then the third model in order answers', async () => {
    const res = await send(door, 'busy', 'hi');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('backup as backup');
    expect(await counter('busy', 'down-too', 'status_503')).toBeGreaterThanOrEqual(1);
    expect(await counter('down-too', 'backup', 'connection')).toBeGreaterThanOrEqual(1);
  });

  it("the fallback model's own settings and policies shape what goes to it (forced tool use)", async () => {
    const before = forced.requests.length;
    const res = await send(door, 'plain-down', 'hi', false, true);
    expect(res.status).toBe(200);
    await res.text();
    const sent = JSON.parse(forced.requests[before]!.body.toString()) as {
      model: string;
      tool_choice?: unknown;
      tools?: Array<{ function: { name: string } }>;
    };
    expect(sent.model).toBe('forced-backup');
    expect(sent.tool_choice).toBe('required');
    expect(sent.tools?.map((t) => t.function.name)).toContain('final_answer');
  });

  for (const stream of [false, true]) {
    it(`${stream ? 'streamed' : 'not streamed'}: a full admission queue falls over to the next model`, async () => {
      const before = await counter('full', 'backup', 'queue_full');
      const first = send(door, 'full', 'hold', stream);
      await waitFor(() => release.length === 1);
      const res = await send(door, 'full', 'hi', stream);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('backup as backup');
      expect(await counter('full', 'backup', 'queue_full')).toBe(before + 1);
      release.shift()!();
      const held = await first;
      expect(held.status).toBe(200);
      expect(await held.text()).toContain('held as full');
    });
  }

  it('no fallback once a byte of the answer reached the client', async () => {
    const before = backup.requests.length;
    const res = await send(door, 'torn', 'hi', true);
    const text = await res.text();
    expect(text).toContain('first words');
    expect(text).not.toContain('backup');
    expect(backup.requests.length).toBe(before);
  });
});

describe('the trace', () => {
  it('names each fallback on the log line', async () => {
    const { stream, lines } = logCapture();
    const app = await buildApp(
      loadConfig(
        {},
        {
          defaults: { forceToolUse: false },
          models: { down: { upstream: deadUrl, fallback: ['backup'] }, backup: { upstream: backup.url } },
        },
      ),
      { logger: { level: 'info', stream } },
    );
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'x-request-id': 'fallback-trace' },
        payload: { model: 'down', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.statusCode).toBe(200);
      await waitFor(() => lines.some((l) => l.reqId === 'fallback-trace'));
      const line = lines.find((l) => l.reqId === 'fallback-trace')!;
      expect(line.harness).toMatchObject({
        routeFallbacks: [{ from: 'down', to: 'backup', reason: 'connection' }],
        servedBy: 'backup',
      });
      // The upstream that answered, not the one first tried.
      expect(line.upstream).toBe(backup.url.replace(/\/+$/, ''));
    } finally {
      await app.close();
    }
  });
});

describe('long context', () => {
  it('a prompt beyond the window goes to the long-context model; a short one stays', async () => {
    const short = await send('chat', 'main', 'short');
    expect(await short.text()).toContain('main as main');
    const res = await send('chat', 'main', 'word '.repeat(400));
    expect(await res.text()).toContain('long as long-model');
    await waitFor(() => long.requests.length === 1);
    expect(await counter('main', 'long-model', 'long_context')).toBe(1);
  });
});
