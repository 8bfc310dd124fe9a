/**
 * An upstream that sends its whole answer and `[DONE]`, then keeps the connection open (silent,
 * or sending on). Every front door read on to the body's end: the client's stream stayed open,
 * and a held answer (tools, forced tool use) was withheld, until the upstream's idle timeout
 * made it an error event (120 s by default; a forced answer was lost). Reading now stops at
 * [DONE]: the client's stream ends whole at once, and the upstream's rest is dropped in the
 * background (cancelled past 64 KB or 1 s). Streams relayed as the upstream's bytes (the chat
 * door without tools, `/v1/completions`, an event stream of a route toolproof does not own) end
 * just past the [DONE] event, also when more follows it in the same read: that rest reached the
 * client (the chat door, the completions relay), and a passed-through stream stayed open until
 * the idle timeout.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { chunkEvent, proxyInFrontOf } from '../support/harness.js';

/**
 * Each upstream request's close (its response ended or cancelled), by the case tag its prompt
 * carries (`case N`): the cases run at once against the one upstream, each waiting on its own.
 */
const closed = new Map<string, Promise<void>>();

const pair = proxyInFrontOf(
  (req, res) => {
    const on = req.body.includes('sending on') || req.body.includes('same read');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const tag = /case \d+/.exec(req.body.toString())?.[0] ?? 'untagged';
    closed.set(tag, new Promise((resolve) => res.on('close', () => resolve())));
    // In the same read too: the rest follows [DONE] in the write that carries it.
    const same = req.body.includes('same read') ? `${chunkEvent({ content: ' MORE' })}data: [DONE]\n\n` : '';
    res.write(
      `${chunkEvent({ role: 'assistant', content: 'the answer' })}${chunkEvent({}, 'stop')}data: [DONE]\n\n${same}`,
    );
    // Silent after it, or an event (and another [DONE]) every 20 ms, until toolproof hangs up.
    const timer = setInterval(() => {
      if (on) res.write(`${chunkEvent({ content: ' MORE' })}data: [DONE]\n\n`);
    }, 20);
    res.on('close', () => clearInterval(timer));
  },
  { env: { TOOLPROOF_IDLE_TIMEOUT_MS: '30000' } },
);

const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };
const DOORS = [
  ['chat, relayed', '/v1/chat/completions', (c: string) => ({ messages: [{ role: 'user', content: c }] })],
  [
    'chat, tools held',
    '/v1/chat/completions',
    (c: string) => ({ messages: [{ role: 'user', content: c }], tools: [tool] }),
  ],
  ['Responses', '/v1/responses', (c: string) => ({ input: c })],
  ['Messages', '/v1/messages', (c: string) => ({ max_tokens: 50, messages: [{ role: 'user', content: c }] })],
  ['completions, relayed as bytes', '/v1/completions', (c: string) => ({ prompt: c })],
  ['a route toolproof does not own, passed through', '/v1/some/other', (c: string) => ({ input: c })],
] as const;
const AFTER = ['silent', 'sending on', 'sending on, in the same read'] as const;
const CASES = AFTER.flatMap((after) => DOORS.map((door) => [after, ...door] as const));

/** What a case saw: the client's answer, and whether its upstream request was closed in time. */
type Outcome = { status: number; text: string; upstreamClosed: boolean } | { error: unknown };

/**
 * Every case at once (each waits up to ~1 s for its upstream request's cancel: one after
 * another they took ~10 s), each asserted by its own test below.
 */
const outcomes = new Map<string, Promise<Outcome>>();

async function run(index: number): Promise<Outcome> {
  const [after, , path, body] = CASES[index]!;
  try {
    const res = await fetch(`${pair.proxy.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm1', stream: true, ...body(`${after} (case ${index})`) }),
      // Far below the upstream idle timeout (30 s) an unended stream would wait for; all 18 leave
      // at once, so on a loaded box each needs more than the 5 s one alone had.
      signal: AbortSignal.timeout(12_000),
    });
    const text = await res.text();
    // The upstream's rest is not read on for ever: its request is cancelled within ~1 s.
    let timer: NodeJS.Timeout | undefined;
    const upstreamClosed = await Promise.race([
      (closed.get(`case ${index}`) ?? Promise.reject(new Error('no upstream request'))).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), 3_000);
      }),
    ]).finally(() => clearTimeout(timer));
    return { status: res.status, text, upstreamClosed };
  } catch (error) {
    return { error };
  }
}

describe('an upstream that keeps its connection open after [DONE]', () => {
  beforeAll(() => {
    for (let i = 0; i < CASES.length; i++) outcomes.set(String(i), run(i));
  });

  it.each(CASES.map((c, i) => [`${c[0]}: ${c[1]}`, i] as const))(
    "%s ends the client's stream whole, at once",
    async (_name, index) => {
      const outcome = await outcomes.get(String(index))!;
      if ('error' in outcome) throw outcome.error;
      const { status, text, upstreamClosed } = outcome;
      expect(status).toBe(200);
      expect(text).toContain('the answer');
      expect(text).not.toContain('MORE');
      expect(text).not.toMatch(/"error":\{|event: error|response\.failed/);
      expect(text).toMatch(/data: \[DONE\]\n\n$|message_stop|response\.completed/);
      expect(upstreamClosed).toBe(true);
    },
  );
});
