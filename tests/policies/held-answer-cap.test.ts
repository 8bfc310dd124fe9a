/**
 * Issue 18 item 6: an answer held for a possible corrective retry had no cap. It was kept as
 * every chunk object (~0.9 KB per delta: a 128k-token answer cost ~106 MB per stream), and held
 * call arguments were uncapped too (64 MB of them: 1.1 GB of RSS). Now held text is kept as
 * text, and everything the hook keeps counts against maxHeldBytes: past it, what was held goes
 * out at once, the rest streams live, and the answer is not judged (no retry), streamed or not.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createHeldCallsStreamHook, type TurnJudge } from '../../policies/corrective-retry/stream.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MB = 1024 * 1024;

/** A freshly parsed chunk, as the stream driver hands one over. */
function parsed(delta: unknown, finish: string | null = null): ChatCompletionChunk {
  return JSON.parse(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      system_fingerprint: 'fp',
      choices: [{ index: 0, delta, finish_reason: finish }],
    }),
  ) as ChatCompletionChunk;
}

interface Seen {
  content: string;
  args: string;
  name: string;
  liveContent: number;
  liveArgs: number;
  judged: Array<Parameters<TurnJudge>[0]>;
}

function assemble(out: ChatCompletionChunk[], seen: Seen, live: boolean): void {
  for (const c of out) {
    for (const ch of c.choices) {
      if (typeof ch.delta.content === 'string') {
        seen.content += ch.delta.content;
        if (live) seen.liveContent += ch.delta.content.length;
      }
      for (const td of ch.delta.tool_calls ?? []) {
        if (td.function?.name) seen.name += td.function.name;
        if (td.function?.arguments) {
          seen.args += td.function.arguments;
          if (live) seen.liveArgs += td.function.arguments.length;
        }
      }
    }
  }
}

function run(chunks: Iterable<ChatCompletionChunk>, maxHeldChars: number): Seen {
  const seen: Seen = { content: '', args: '', name: '', liveContent: 0, liveArgs: 0, judged: [] };
  const hook = createHeldCallsStreamHook(
    (turn) => {
      seen.judged.push(turn);
      return { effects: [] };
    },
    { hold: true, maxHeldChars },
  );
  for (const c of chunks) assemble(hook.onChunk(c), seen, true);
  assemble(hook.onEnd().chunks, seen, false);
  return seen;
}

describe('the held answer is capped (unit: the corrective-retry stream hook)', () => {
  it('4 MB of prose: released at the 1 MiB cap, the rest live, nothing lost, not judged', () => {
    const words = Array.from(
      { length: (4 * MB) / 64 },
      (_, i) => `${String(i).padStart(7, '0')} ${'w'.repeat(55)} `,
    );
    function* chunks() {
      yield parsed({ role: 'assistant', content: '' });
      for (const w of words) yield parsed({ content: w });
      yield parsed({}, 'stop');
    }
    const seen = run(chunks(), MB);
    expect(seen.content).toBe(words.join(''));
    // before: 0 (everything held to the end)
    expect(seen.liveContent).toBe(seen.content.length);
    expect(seen.judged).toHaveLength(1);
    expect(seen.judged[0]?.tooLong).toBe(true);
  });

  it('chunks with a 1 MB extra field count what they weigh: 100 of them are not held (issue 27)', () => {
    const extra = 'x'.repeat(MB);
    const hook = createHeldCallsStreamHook(() => ({ effects: [] }), { hold: true, maxHeldChars: MB });
    let live = 0;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100; i++) {
      // freshly parsed: each chunk its own 1 MB string, as the SSE parser hands them over
      const c = JSON.parse(
        JSON.stringify({ ...parsed({ content: `part ${i} ` }), extra: `${i}${extra}` }),
      ) as ChatCompletionChunk;
      live += hook.onChunk(c).length;
    }
    gc();
    const grown = (process.memoryUsage().heapUsed - before) / MB;
    // before: counted at 512 characters each, all 100 held to the end (+100 MB)
    expect(grown).toBeLessThan(16);
    expect(live).toBeGreaterThan(90);
    expect(hook.onEnd().chunks.length).toBeLessThan(5);
  });

  it('3 MB of call arguments: the call goes out at the cap (head, then arguments), the rest live', () => {
    const pieces = Array.from({ length: 3 * 1024 }, (_, i) => `"k${i}": "${'v'.repeat(1000)}", `);
    const chunks = [
      parsed({ role: 'assistant', content: null }),
      parsed({
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{' } }],
      }),
      ...pieces.map((p) => parsed({ tool_calls: [{ index: 0, function: { arguments: p } }] })),
      parsed({ tool_calls: [{ index: 0, function: { arguments: '"end": 1}' } }] }),
      parsed({}, 'tool_calls'),
    ];
    const seen = run(chunks, MB);
    expect(seen.name).toBe('f');
    expect(seen.args).toBe(`{${pieces.join('')}"end": 1}`);
    expect(seen.liveArgs).toBe(seen.args.length);
    expect(seen.judged[0]?.tooLong).toBe(true);
  });

  it('under the cap nothing changes: held to the end, then judged whole', () => {
    const chunks = [
      parsed({ role: 'assistant', content: '' }),
      parsed({ content: 'Hello' }),
      parsed({}, 'stop'),
    ];
    const seen = run(chunks, MB);
    expect(seen.liveContent).toBe(0);
    expect(seen.content).toBe('Hello');
    expect(seen.judged[0]).toEqual({ content: 'Hello', toolCalls: [], finishReason: 'stop' });
  });

  it('held prose is kept as text: heap per held delta', async () => {
    const n = 20_000;
    const hooks: unknown[] = [];
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let s = 0; s < 5; s++) {
      const hook = createHeldCallsStreamHook(() => ({ effects: [] }), { hold: true, maxHeldChars: MB });
      hook.onChunk(parsed({ role: 'assistant', content: '' }));
      for (let i = 0; i < n / 5; i++) hook.onChunk(parsed({ content: ` tok${i}` }));
      hooks.push(hook);
    }
    await new Promise((r) => setTimeout(r, 0));
    gc();
    gc();
    const perDelta = (process.memoryUsage().heapUsed - before) / n;
    expect(hooks).toHaveLength(5);
    // Measured with these small chunks: ~270 bytes per delta before (the chunk, its choice and
    // delta; real upstream chunks carry more keys), ~18 after.
    expect(perDelta).toBeLessThan(100);
  });
});
