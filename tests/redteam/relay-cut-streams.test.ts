/**
 * A stream relayed as the upstream's bytes (chat without tools, /v1/completions) that the
 * upstream ends before the answer finished: no finish_reason and no [DONE]. A clean close, a
 * stream that turns into a plain JSON error half way (not SSE: its line is no event). The relay
 * added its own `data: [DONE]`, so the client read a truncated answer as whole (a gzipped
 * stream read as an empty one: now refused at its head, upstream-content-encoding.test.ts); the
 * front doors (tools on) already end such a stream with the OpenAI error event
 * (stream-driver.ts, cutOff). Now the relays do too, and an answer that did finish (a
 * finish_reason, [DONE] or not, JSON written with spaces as Python writes it) still ends clean.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

type Write = (res: ServerResponse, chat: boolean) => void;
let write: Write = () => undefined;
let upstreamClosed = 0;
const pair = proxyInFrontOf(
  (req, res) => {
    res.on('close', () => upstreamClosed++);
    write(res, req.url.endsWith('/chat/completions'));
  },
  { env: { TOOLPROOF_IDLE_TIMEOUT_MS: '2000' } },
);

const chunk = (chat: boolean, text: string, finish: string | null) =>
  chat
    ? {
        id: 'c',
        object: 'chat.completion.chunk',
        model: 'm1',
        choices: [{ index: 0, delta: { content: text }, finish_reason: finish }],
      }
    : {
        id: 'c',
        object: 'text_completion',
        model: 'm1',
        choices: [{ index: 0, text, finish_reason: finish }],
      };
const sse = (events: unknown[]) =>
  events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');
const head = (res: ServerResponse, extra: Record<string, string> = {}) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', ...extra });

const cut: Record<string, Write> = {
  'a clean close mid-answer': (res, chat) => {
    head(res);
    res.end(sse([chunk(chat, 'hel', null), chunk(chat, 'lo', null)]));
  },
  'a plain JSON error half way': (res, chat) => {
    head(res);
    res.end(`${sse([chunk(chat, 'hel', null)])}{"error":{"message":"out of memory","type":"server_error"}}`);
  },
};

const whole: Record<string, Write> = {
  'a finish_reason and [DONE]': (res, chat) => {
    head(res);
    res.end(sse([chunk(chat, 'hello', null), chunk(chat, '', 'stop'), '[DONE]']));
  },
  'a finish_reason, no [DONE]': (res, chat) => {
    head(res);
    res.end(sse([chunk(chat, 'hello', null), chunk(chat, '', 'length')]));
  },
  'a finish_reason written with spaces, then usage, no [DONE]': (res, chat) => {
    head(res);
    const finish = JSON.stringify(chunk(chat, '', 'stop')).replace(/":/g, '": ');
    res.end(
      `${sse([chunk(chat, 'hello', null)])}data: ${finish}\n\n${sse([{ id: 'c', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }])}`,
    );
  },
};

const doors = {
  chat: {
    path: '/v1/chat/completions',
    body: { model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }] },
  },
  completions: { path: '/v1/completions', body: { model: 'm1', stream: true, prompt: 'hi' } },
};

async function post(door: keyof typeof doors): Promise<string> {
  const { path, body } = doors[door];
  const res = await fetch(pair.proxy.origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(200);
  return res.text();
}

describe.each(['chat', 'completions'] as const)('%s streamed without tools (relayed)', (door) => {
  it.each(Object.keys(cut))(
    '%s: the OpenAI error event, not a [DONE] that says it is whole',
    async (name) => {
      write = cut[name]!;
      const text = await post(door);
      expect(text).toMatch(/"code":"TP_ERR_UPSTREAM_CUT_OFF"/);
      expect(text).toContain('before the answer finished');
      // No [DONE] before the error: nothing told the client the answer was whole.
      const error = text.indexOf('"error":{');
      expect(text.slice(0, error)).not.toContain('[DONE]');
      expect(upstreamClosed).toBeGreaterThan(0);
    },
  );

  it.each(Object.keys(whole))('%s: ends clean', async (name) => {
    write = whole[name]!;
    const text = await post(door);
    expect(text).not.toContain('"error"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
