/** The replay comparator must be able to fail: a broken live answer is reported, not waved through. */
import { describe, expect, it } from 'vitest';
import { compareExchange, type Recording, scenarioFromRecording } from './replay-compare.js';

const errorRec: Recording = {
  name: 'bad',
  server_config: 'random-hermes',
  request: { method: 'POST', path: '/v1/chat/completions', headers: {} },
  status: 400,
  headers: { Connection: 'close', 'Content-Type': 'application/json; charset=utf-8', Server: 'llama.cpp' },
  body_kind: 'json',
  body: { error: { code: 400, message: 'Invalid tool_choice: bogus', type: 'invalid_request_error' } },
};

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ finish_reason: finish, index: 0, delta }], id: 'chatcmpl-abcdefghijabcdefghijabcdefghij12', object: 'chat.completion.chunk' })}\n\n`;
const sseBody =
  chunk({ role: 'assistant', content: null }) +
  chunk({ content: 'hi' }) +
  chunk({}, 'stop') +
  'data: [DONE]\n\n';
const sseRec: Recording = {
  ...errorRec,
  status: 200,
  headers: { 'Content-Type': 'text/event-stream', Server: 'llama.cpp' },
  body_kind: 'sse',
  body: sseBody,
};

const live = (status: number, text: string, headers: Record<string, string>) => ({
  status,
  text,
  headers: new Headers(headers),
});

describe('compareExchange', () => {
  it('passes an identical exchange', () => {
    expect(compareExchange(errorRec, live(400, JSON.stringify(errorRec.body), errorRec.headers))).toEqual([]);
    expect(compareExchange(sseRec, live(200, sseBody, sseRec.headers))).toEqual([]);
  });

  it('reports status, message, missing Connection: close and extra Keep-Alive', () => {
    const body = JSON.stringify({ error: { code: 400, message: 'other', type: 'invalid_request_error' } });
    const problems = compareExchange(
      errorRec,
      live(500, body, {
        'Content-Type': 'application/json; charset=utf-8',
        Server: 'llama.cpp',
        'Keep-Alive': 'x',
      }),
    );
    expect(problems.join('\n')).toMatch(/status 500 != 400/);
    expect(problems.join('\n')).toMatch(/error body/);
    expect(problems.join('\n')).toMatch(/Connection: close/);
    expect(problems.join('\n')).toMatch(/with Keep-Alive/);
  });

  it('reports broken SSE framing, a missing [DONE] and a wrong first delta', () => {
    const noDone = sseBody.replace('data: [DONE]\n\n', '');
    expect(compareExchange(sseRec, live(200, noDone, sseRec.headers)).join()).toMatch(/event kinds/);
    const eventLine = sseBody.replace('data: ', 'event: x\ndata: ');
    expect(compareExchange(sseRec, live(200, eventLine, sseRec.headers)).join()).toMatch(/bad SSE block/);
    const vllmFirst = sseBody.replace('"content":null', '"content":""');
    expect(compareExchange(sseRec, live(200, vllmFirst, sseRec.headers)).join()).toMatch(/role event shape/);
  });
});

describe('scenarioFromRecording', () => {
  it('scripts a cut answer so that it ends on "length"', () => {
    const rec: Recording = {
      ...errorRec,
      status: 200,
      body: {
        choices: [{ finish_reason: 'length', index: 0, message: { role: 'assistant', content: 'abc' } }],
      },
    };
    expect(scenarioFromRecording(rec)).toEqual({ raw: 'abc~~~', truncateAt: 3 });
  });

  it('does not script request errors: the simulator must produce them itself', () => {
    expect(scenarioFromRecording(errorRec)).toBeNull();
  });
});
