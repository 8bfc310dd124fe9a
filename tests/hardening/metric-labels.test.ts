/**
 * Metric labels that tell the truth and stay bounded.
 * - Model names: junk (even names that 404) takes no label slot, so real models keep theirs: a
 *   name has its own label once the default upstream lists it (its /v1/models, read when /ready
 *   or /v1/models asks) or answered it with success; until then it counts as "other".
 * - Front-door rejections (a validation 400 on chat, Responses, Messages) are counted and logged
 *   under their own front door and the request's model, not api="passthrough" with model="";
 *   a body without a model is "none". A request refused before its body was read (a 401,
 *   malformed JSON) names no model anyone read: model="", never a made-up "unknown".
 * - Routes toolproof answers itself are not "passthrough": the inspector is api="inspect", the
 *   model list api="models".
 */
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { closeApp } from '../server/stack.js';
import { logCapture } from '../server/test-utils.js';
import { type FakeUpstream, fakeUpstream, type Recorded, sendCompletion } from '../support/harness.js';

const LISTED = 'org/listed-7b';
const UNLISTED = 'alias-answered';

/** Serves LISTED (and lists it), answers UNLISTED too (as llama-server answers any name), 404s the rest. */
function handler(req: Recorded, res: ServerResponse): void {
  if (req.method === 'GET' && req.url === '/v1/models') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: LISTED, object: 'model' }] }));
    return;
  }
  const model = (JSON.parse(req.body.toString('utf8') || '{}') as { model?: string }).model;
  if (model !== LISTED && model !== UNLISTED) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { message: `The model \`${model}\` does not exist.`, type: 'NotFoundError' } }),
    );
    return;
  }
  sendCompletion(res, { content: 'ok' }, 'stop', {}, model);
}

let upstream: FakeUpstream | undefined;
let app: ToolproofApp | undefined;
afterEach(async () => {
  if (app) await closeApp(app);
  await upstream?.close();
  app = undefined;
  upstream = undefined;
});

async function start(
  env: Record<string, string> = {},
): Promise<{ origin: string; lines: Array<Record<string, unknown>> }> {
  upstream = await fakeUpstream(handler);
  const { stream, lines } = logCapture();
  app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream.url, ...env }), {
    logger: { level: 'info', stream },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, lines };
}

async function post(origin: string, path: string, body: unknown, reqId = ''): Promise<number> {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(reqId ? { 'x-request-id': reqId } : {}) },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

function modelLabels(metrics: string): Set<string> {
  return new Set([...metrics.matchAll(/^toolproof_requests_total\{model="([^"]*)"/gm)].map((m) => m[1]!));
}

describe('model labels cannot be exhausted by junk', () => {
  it('150 junk names (404) take no slot: a listed model and an answered one still get their own label', async () => {
    const { origin } = await start();
    for (let i = 0; i < 150; i++)
      expect(await post(origin, '/v1/chat/completions', chat(`junk-${i}`))).toBe(404);
    // The readiness probe reads what the upstream serves.
    expect((await fetch(`${origin}/ready`)).status).toBe(200);
    expect(await post(origin, '/v1/chat/completions', chat(LISTED))).toBe(200);
    // A name the upstream does not list, but answers: "other" until its first success, then its own.
    expect(await post(origin, '/v1/chat/completions', chat(UNLISTED))).toBe(200);
    expect(await post(origin, '/v1/chat/completions', chat(UNLISTED))).toBe(200);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(
        `^toolproof_requests_total\\{model="${LISTED}",route="chat/completions",status="200",api="chat"\\} 1$`,
        'm',
      ),
    );
    expect(metrics).toMatch(
      new RegExp(
        `^toolproof_requests_total\\{model="${UNLISTED}",route="chat/completions",status="200",api="chat"\\} 1$`,
        'm',
      ),
    );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="other",route="chat\/completions",status="404",api="chat"\} 150$/m,
    );
    expect(metrics).not.toContain('junk-');
    expect([...modelLabels(metrics)].sort()).toEqual(['', UNLISTED, LISTED, 'other'].sort());
  });

  it('names answered with success fill a bucket of their own: the listed names keep their slots', async () => {
    const { origin } = await start();
    const labels = app!.toolproof.modelLabels;
    for (let i = 0; i < 200; i++) labels.answeredWith(`answered-${i}`);
    labels.serve([LISTED]);
    expect(labels.label(LISTED)).toBe(LISTED);
    expect(labels.label('answered-0')).toBe('answered-0');
    expect(labels.label('answered-199')).toBe('other');
    expect(await post(origin, '/v1/chat/completions', chat(LISTED))).toBe(200);
  });
});

describe('front-door rejections carry their own front door and the model', () => {
  it('a validation 400 on Messages, Responses and chat is labelled with its api and model, in metrics and the log line', async () => {
    const { origin, lines } = await start();
    await fetch(`${origin}/ready`); // LISTED is served: it keeps its label
    const cases: Array<[string, unknown, string, string]> = [
      [
        '/v1/messages',
        { model: LISTED, messages: [{ role: 'user', content: 'hi' }] },
        'messages',
        'messages',
      ],
      ['/v1/responses', { model: LISTED, input: 42 }, 'responses', 'responses'],
      ['/v1/chat/completions', { model: LISTED, messages: 'hi' }, 'chat', 'chat/completions'],
      ['/v1/messages', { model: 'junk-x', messages: 'hi', max_tokens: 1 }, 'messages', 'messages'],
      ['/v1/responses', { input: 'no model' }, 'responses', 'responses'],
    ];
    for (const [i, [path, body, api, route]] of cases.entries()) {
      const reqId = `reject-${i}`;
      expect(await post(origin, path, body, reqId), path).toBe(400);
      await new Promise((r) => setTimeout(r, 10));
      const line = lines.find((l) => l.reqId === reqId && l.msg === 'request');
      const model = (body as { model?: string }).model;
      expect(line, path).toMatchObject({ api, status: 400, ...(model === undefined ? {} : { model }) });
      const label = model === LISTED ? LISTED : model === undefined ? 'none' : 'other';
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      expect(metrics, path).toMatch(
        new RegExp(
          `^toolproof_requests_total\\{model="${label}",route="${route}",status="400",api="${api}"\\} [1-9]`,
          'm',
        ),
      );
    }
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).not.toMatch(/status="400",api="passthrough"/);
  });
});

describe('requests refused before their body was read, and routes toolproof answers itself', () => {
  const KEY = 'sk-labels-000000001';
  const metricsOf = async (origin: string) =>
    (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();

  it('a 401 and malformed JSON are model="" (not "unknown"), on their own front door', async () => {
    const { origin } = await start({ TOOLPROOF_API_KEYS: KEY });
    await fetch(`${origin}/ready`);
    for (const model of [LISTED, 'junk-y']) {
      const res = await fetch(`${origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-key-000' },
        body: JSON.stringify(chat(model)),
      });
      expect(res.status).toBe(401);
    }
    const bad = await fetch(`${origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: '{"model": "x", ',
    });
    expect(bad.status).toBe(400);
    // A relayed route names its model as a front door does: a body without one is "none".
    const noModel = await fetch(`${origin}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ prompt: 'no model' }),
    });
    expect(noModel.status).toBe(400);
    const metrics = await metricsOf(origin);
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="",route="chat\/completions",status="401",api="chat"\} 2$/m,
    );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="none",route="completions",status="400",api="passthrough"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="",route="messages",status="400",api="messages"\} 1$/m,
    );
    expect(metrics).not.toContain('model="unknown"');
  });

  it('the inspector is api="inspect" and the model list api="models", refused or not', async () => {
    const { origin } = await start({ TOOLPROOF_API_KEYS: KEY });
    const auth = { authorization: `Bearer ${KEY}` };
    expect((await fetch(`${origin}/inspect/api/requests`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${origin}/inspect/api/requests`)).status).toBe(401);
    expect((await fetch(`${origin}/inspect/api/nothing-here`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${origin}/v1/models`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${origin}/v1/models/${encodeURIComponent(LISTED)}`, { headers: auth })).status).toBe(
      200,
    );
    expect((await fetch(`${origin}/v1/models/nope`, { headers: auth })).status).toBe(404);
    const metrics = await metricsOf(origin);
    for (const [route, status] of [
      ['inspect/api/requests', 200],
      ['inspect/api/requests', 401],
      ['inspect/*', 404],
    ] as const)
      expect(metrics).toMatch(
        new RegExp(
          `^toolproof_requests_total\\{model="",route="${route.replace('*', '\\*')}",status="${status}",api="inspect"\\} 1$`,
          'm',
        ),
      );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="",route="models",status="200",api="models"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="",route="models\/\*",status="200",api="models"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^toolproof_requests_total\{model="",route="models\/\*",status="404",api="models"\} 1$/m,
    );
    expect(metrics).not.toMatch(/api="passthrough"/);
  });
});
