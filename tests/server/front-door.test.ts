/**
 * registerFrontDoor with a door the table does not hold: what a new API gets from its declaration
 * alone (docs/front-doors.md). Its route and extra routes answer errors in its own body (schema
 * 400s included), carry its label in the metrics, frame through its own answer and stream output,
 * and list it in /docs. (A door's models page is read from FRONT_DOORS: the Messages tests cover it.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import type { ChatCall } from '../../server/chat/context.js';
import { startChatCall } from '../../server/chat/start.js';
import { loadConfig } from '../../server/config.js';
import { ChatSseOutput } from '../../server/front-doors/chat/output.js';
import { chatCompletionBody } from '../../server/front-doors/chat/schema.js';
import { registerFrontDoor } from '../../server/front-doors/register.js';
import type { FrontDoor } from '../../server/front-doors/types.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';

const probe: FrontDoor<'chat', ChatCall> = {
  api: 'chat',
  path: '/v1/probe',
  schema: { summary: 'A probe door.', tags: ['probe'], body: { ...chatCompletionBody, $id: 'ProbeRequest' } },
  errorBody: (err) => ({ probe_error: { code: err.code, message: err.message } }),
  errorEvent: (err) => `data: ${JSON.stringify({ probe_error: { code: err.code } })}\n\n`,
  open: (request, _reply, state) =>
    startChatCall(request, state, request.body as ChatCompletionRequest, 'chat', request.rawBody),
  callOf: (call) => call,
  answer(reply, result) {
    if (result.kind === 'raw') return reply.code(result.status).send({ probe: 'raw' });
    return reply.send({ probe: result.completion.choices[0]?.message.content ?? null });
  },
  output: (reply, _call, state) => new ChatSseOutput(reply, {}, state.config.streamKeepAliveMs),
  routes(scope) {
    scope.get('/v1/probe/extra', async () => {
      throw new ToolproofError('TP_ERR_NOT_FOUND', { message: 'not here' });
    });
  },
};

describe('registerFrontDoor: a door from its declaration alone', () => {
  let sim: Simulator;
  let app: ToolproofApp;
  let origin: string;
  const post = (body: unknown) =>
    fetch(`${origin}/v1/probe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    sim = await createSimulator({ personality: 'vllm' });
    app = await buildApp(
      { ...loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), simulator: true },
      { logger: false },
    );
    await registerFrontDoor(app, app.toolproof, probe);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });
  afterAll(async () => {
    await app.close();
    await sim.close();
  });

  it('a schema 400 and an extra route error come in the door error body', async () => {
    const bad = await post({ model: 'm' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      probe_error: { code: 'TP_ERR_INVALID_FIELD', message: 'Missing required field "messages".' },
    });
    const extra = await fetch(`${origin}/v1/probe/extra`);
    expect(extra.status).toBe(404);
    expect(await extra.json()).toEqual({ probe_error: { code: 'TP_ERR_NOT_FOUND', message: 'not here' } });
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).toMatch(
      /toolproof_requests_total\{model="[^"]*",route="probe",status="400",api="chat"\} 1/,
    );
  });

  it('answers through the door: its answer, its stream output', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const whole = await post({ model: 'm', messages });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('x-toolproof-attempts')).toBe('1');
    expect(Object.keys((await whole.json()) as object)).toEqual(['probe']);
    const streamed = await post({ model: 'm', messages, stream: true });
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect((await streamed.text()).endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('its route in /docs, with its schema', async () => {
    const doc = (await (await fetch(`${origin}/docs/json`)).json()) as { paths: Record<string, unknown> };
    expect(doc.paths['/v1/probe']).toMatchObject({ post: { summary: 'A probe door.', tags: ['probe'] } });
  });
});
