/**
 * `toolproof_upstream_errors_total` tells a cut from an unreachable backend. A non-streamed
 * answer whose body the upstream closed after its headers (a backend restarted mid-answer) is
 * sent again once (pipeline.ts resendAfterCut), as a stream cut before any answer is. The stream's
 * cut was counted `mid_stream`; the body's was counted `unreachable`, though the backend was
 * reached and had begun to answer (the client's error, when it comes, says
 * TP_ERR_UPSTREAM_CUT_OFF), and a second cut (the one not sent again, the client's 502) was not
 * counted at all, nor was one on /v1/completions. Now each is `cut_off`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { weatherTool } from '../server/stack.js';
import {
  type ScriptedReply,
  type ScriptedStack,
  startScriptedStack,
  turnCompletion,
} from '../server/scripted-upstream.js';

/** Per attempt: cut the body after its first bytes, or answer. */
let cuts = 0;
const CUT: ScriptedReply = { raw: '{"id":"chatcmpl-x","choices":[{"index":0,"mess', destroyAfter: true };
let stack: ScriptedStack;
beforeAll(async () => {
  stack = await startScriptedStack(() => {
    if (cuts > 0) {
      cuts--;
      return CUT;
    }
    return { json: turnCompletion({ content: 'sunny' }) };
  });
});
afterAll(() => stack.close());

const count = async (kind: string): Promise<number> => {
  const text = await (await fetch(`${stack.url.replace(/\/v1$/, '')}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('toolproof_upstream_errors_total{') && l.includes(`kind="${kind}"`))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
};
/** With tools: the harness reads the body (and sends a cut again); without: relayed as it came. */
const ask = (withTools = true) =>
  fetch(`${stack.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'Weather?' }],
      ...(withTools ? { tools: [weatherTool] } : {}),
    }),
  });

describe('a non-streamed body cut after its headers', () => {
  it('sent again and answered: counted cut_off, not unreachable', async () => {
    const before = { cut: await count('cut_off'), unreachable: await count('unreachable') };
    cuts = 1;
    const res = await ask();
    expect(res.status).toBe(200);
    expect(await count('cut_off')).toBe(before.cut + 1);
    expect(await count('unreachable')).toBe(before.unreachable);
  });

  it('cut again: both cuts counted cut_off, the client told TP_ERR_UPSTREAM_CUT_OFF', async () => {
    const before = { cut: await count('cut_off'), unreachable: await count('unreachable') };
    cuts = 2;
    const res = await ask();
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(await count('cut_off')).toBe(before.cut + 2);
    expect(await count('unreachable')).toBe(before.unreachable);
  });

  it('relayed without tools (never sent again): counted cut_off once', async () => {
    const before = { cut: await count('cut_off'), unreachable: await count('unreachable') };
    cuts = 1;
    const res = await ask(false);
    expect(res.status).toBe(502);
    expect(await count('cut_off')).toBe(before.cut + 1);
    expect(await count('unreachable')).toBe(before.unreachable);
    cuts = 0;
  });

  it('on /v1/completions (relayed whole): counted cut_off, where it went uncounted', async () => {
    const before = { cut: await count('cut_off'), unreachable: await count('unreachable') };
    cuts = 1;
    const res = await fetch(`${stack.url}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'Weather?' }),
    });
    expect(res.status).toBe(502);
    expect(await count('cut_off')).toBe(before.cut + 1);
    expect(await count('unreachable')).toBe(before.unreachable);
    cuts = 0;
  });
});
