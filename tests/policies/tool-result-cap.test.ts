import { describe, expect, it } from 'vitest';
import { cutToolResult, estimateTokens } from '../../policies/kit/cut.js';
import { resultCap, toolResultCapPolicy } from '../../policies/tool-result-cap/index.js';
import { keptTokens } from '../../policies/tool-result-cap/overflow.js';
import { PROMPT_OVER_WINDOW } from '../../policies/types.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

/** Tokens as a byte-level tokenizer gives them at least: printable ASCII 3 characters a token, anything else 1 a character. */
function tokensAtLeast(text: string): number {
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if ((c >= 0x20 && c < 0x7f) || c === 10 || c === 9 || c === 13) ascii++;
    else other += ch.length;
  }
  return ascii / 3 + other;
}

/** A binary file printed by a shell: 2 MB of NUL bytes in lines of 100 (the opencode session's output). */
const nulDump = () => `${'\0'.repeat(100)}\n`.repeat(20_000);

const log = (n: number) => Array.from({ length: n }, (_, i) => `line ${i} ${'x'.repeat(40)}`).join('\n');

describe('tool-result-cap', () => {
  it('keeps a result that fits, and cuts a long one to head and tail with a marker', () => {
    expect(cutToolResult('short', 100)).toBe('short');
    const text = log(50_000);
    const cut = cutToolResult(text, 1000);
    expect(cut.length).toBeLessThan(3000 + 400);
    expect(cut.startsWith('line 0 ')).toBe(true);
    expect(cut.endsWith(`line 49999 ${'x'.repeat(40)}`)).toBe(true);
    expect(cut).toMatch(
      /\[\.\.\. toolproof left out \d+ of this tool result's \d+ characters \(\d+ lines\) to fit the model's context window; re-run with a narrower command/,
    );
    // From the result's own characters: the same every time.
    expect(cutToolResult(text, 1000)).toBe(cut);
  });

  it('cuts tool messages only, and costs about linear time (x4 input, at most ~x4 time)', () => {
    const big = log(20_000);
    const req = {
      model: 'm',
      messages: [
        { role: 'user', content: big },
        { role: 'tool', tool_call_id: 'c', content: big },
      ],
    };
    const d = toolResultCapPolicy.onRequest!(req, ctxWith({}, { maxToolResultTokens: 500 }), req);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages[0]!.content).toBe(big);
    expect(String(d.request.messages[1]!.content).length).toBeLessThan(2000);
    expect(d.effects).toEqual([{ policy: 'tool-result-cap', kind: 'tool-result-cut', count: 1 }]);
    // x4 the lines of a tool result, about x4 the cut's CPU (its own two timings, x8 + 20 ms,
    // read once more when over, are now the budget's interleaved medians)
    const s = measureScaling(log, (t) => cutToolResult(t, 500), { from: 5_000, max: 100_000 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('holds its unit on dense content: a NUL dump, CJK, emoji cost a token a character, not a third', () => {
    // Before: 3 characters a token for everything, so 24,000 NULs passed an 8,000-token cap
    // (an opencode session overflowed a 32k window with maxToolResultTokens 8000).
    for (const text of [
      nulDump(),
      '日志行：连接超时，正在重试。\n'.repeat(50_000),
      '🙂 done\n'.repeat(100_000),
    ]) {
      const cut = cutToolResult(text, 8000);
      expect(cut).toContain('re-run with a narrower command');
      expect(tokensAtLeast(cut)).toBeLessThan(8000 + 100);
      expect(estimateTokens(cut)).toBeLessThan(8000 + 100);
      expect(tokensAtLeast(cut)).toBeGreaterThan(8000 * 0.7);
      expect(cutToolResult(text, 8000)).toBe(cut);
      // No surrogate pair is split.
      expect(Buffer.from(cut, 'utf8').toString('utf8')).toBe(cut);
    }
    // ASCII is measured as before: 3 characters a token.
    const ascii = log(50_000);
    expect(cutToolResult(ascii, 1000).length).toBeGreaterThan(2400);
    expect(cutToolResult('x'.repeat(3000), 1000)).toBe('x'.repeat(3000));
    expect(cutToolResult('\0'.repeat(1000), 1000)).toBe('\0'.repeat(1000));
    // Just over the cap, the cut with its marker (~65 tokens) would be longer: whole.
    expect(cutToolResult('\0'.repeat(1001), 1000)).toBe('\0'.repeat(1001));
    expect(cutToolResult('\0'.repeat(1200), 1000)).toContain('toolproof left out');
  });

  it('never makes a result longer: thousands of short parts, each over its share of the cap, stay whole', () => {
    // Before: each ten-character part held to a share of 1 token got the whole marker (~250
    // characters): 100,000 parts (3.6 MB) went upstream as 22 MB, still over the window.
    const content = Array.from({ length: 20_000 }, () => ({ type: 'text' as const, text: 'abcdefghij' }));
    const req = { model: 'm', messages: [{ role: 'tool', tool_call_id: 'c', content }] };
    const d = toolResultCapPolicy.onRequest!(
      req as never,
      ctxWith({}, { contextWindow: 8192 }),
      req as never,
    );
    expect(d.action === 'continue' && JSON.stringify(d.request).length).toBe(JSON.stringify(req).length);
    // A long part among them is still cut to its share.
    const long = [...content.slice(0, 10), { type: 'text' as const, text: log(5_000) }];
    const cut = toolResultCapPolicy.onRequest!(
      { model: 'm', messages: [{ role: 'tool', tool_call_id: 'c', content: long }] } as never,
      ctxWith({}, { contextWindow: 8192 }),
      req as never,
    );
    expect(cut.effects).toEqual([{ policy: 'tool-result-cap', kind: 'tool-result-cut', count: 1 }]);
  });

  it('caps the result as a whole: several text parts each under the cap do not add up past it', () => {
    const part = (n: number) => ({ type: 'text' as const, text: log(n) });
    // Five parts of ~7,000 tokens each (~35,000 in all) and a short one, under a cap of 8,000.
    const content = [
      part(450),
      part(450),
      { type: 'text' as const, text: 'exit code 0' },
      part(450),
      part(450),
      part(450),
    ];
    const req = { model: 'm', messages: [{ role: 'tool', tool_call_id: 'c', content }] };
    const d = toolResultCapPolicy.onRequest!(
      req as never,
      ctxWith({}, { maxToolResultTokens: 8000 }),
      req as never,
    );
    if (d.action !== 'continue') throw new Error('rejected');
    const parts = d.request.messages[0]!.content as Array<{ type: string; text: string }>;
    expect(parts).toHaveLength(6);
    const total = parts.reduce((n, p) => n + tokensAtLeast(p.text), 0);
    expect(total).toBeLessThan(8000 + 5 * 100);
    expect(total).toBeGreaterThan(8000 * 0.7);
    // The short part is kept whole; the long ones share the rest equally, each with its marker.
    expect(parts[2]!.text).toBe('exit code 0');
    for (const i of [0, 1, 3, 4, 5]) expect(parts[i]!.text).toContain('re-run with a narrower command');
    expect(d.effects).toEqual([{ policy: 'tool-result-cap', kind: 'tool-result-cut', count: 1 }]);
    // The same parts give the same bytes on every turn.
    const again = toolResultCapPolicy.onRequest!(
      req as never,
      ctxWith({}, { maxToolResultTokens: 8000 }),
      req as never,
    );
    expect(JSON.stringify(again)).toBe(JSON.stringify(d));
    // Parts that fit together are left alone.
    const small = {
      model: 'm',
      messages: [{ role: 'tool', tool_call_id: 'c', content: [part(10), part(10)] }],
    };
    const s = toolResultCapPolicy.onRequest!(
      small as never,
      ctxWith({}, { maxToolResultTokens: 8000 }),
      small as never,
    );
    expect(s.action === 'continue' && s.request).toBe(small);
  });

  it('costs about linear time and memory on dense content and many parts (x4 input, at most ~x4)', () => {
    // n characters: n / 2000 text parts of mixed NULs, CJK and ASCII lines, under a cap of 500.
    const make = (n: number) => {
      const line = `${'\0'.repeat(40)}日志行 ${'x'.repeat(50)}\n`;
      const text = line.repeat(Math.ceil(2000 / line.length)).slice(0, 2000);
      const content = Array.from({ length: Math.max(1, n / 2000) }, () => ({ type: 'text' as const, text }));
      return { model: 'm', messages: [{ role: 'tool', tool_call_id: 'c', content }] };
    };
    const ctx = ctxWith({}, { maxToolResultTokens: 500 });
    const s = measureScaling(make, (req) => toolResultCapPolicy.onRequest!(req as never, ctx, req as never), {
      from: 20_000,
      max: 1 << 22,
    });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});

describe('tool-result-cap: no cap set, the window known', () => {
  it('resultCap: the own cap, else a result over the window cut to a quarter of it, else none', () => {
    expect(resultCap({ maxToolResultTokens: 8000, contextWindow: 32768 })).toEqual({ over: 8000, max: 8000 });
    expect(resultCap({ maxToolResultTokens: 0, contextWindow: 32768 })).toEqual({ over: 32768, max: 8192 });
    expect(resultCap({ maxToolResultTokens: 0, contextWindow: 0 })).toBeUndefined();
  });

  it('cuts only what the window cannot hold, text parts counted together, to a quarter of it', () => {
    const onRequest = toolResultCapPolicy.onRequest!;
    const ctx = ctxWith({}, { contextWindow: 4000 });
    expect(toolResultCapPolicy.enabled!(ctx.settings)).toBe(true);
    const req = (content: unknown) =>
      ({
        model: 'm',
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content },
        ],
      }) as never;
    const fits = 'a'.repeat(11_000); // ~3,667 tokens: the window holds it
    const small = onRequest(req(fits), ctx, req(fits));
    expect(small.action === 'continue' && small.request.messages[2]!.content).toBe(fits);
    const parts = [
      { type: 'text', text: 'b'.repeat(7_000) },
      { type: 'text', text: 'c'.repeat(7_000) },
    ];
    const d = onRequest(req(parts), ctx, req(parts));
    if (d.action !== 'continue') throw new Error('continue expected');
    const out = d.request.messages[2]!.content as Array<{ text: string }>;
    const tokens = out.reduce((n, p) => n + estimateTokens(p.text), 0);
    expect(tokens).toBeLessThan(1000 + 2 * 100);
    expect(d.effects).toEqual([expect.objectContaining({ kind: 'tool-result-cut' })]);
  });
});

describe('tool-result-cap: results that each fit and together overflow the window (overflow.ts)', () => {
  const WINDOW = 8192;
  const ctx = ctxWith({}, { contextWindow: WINDOW });
  /** A result of ~2,300 tokens (7,000 characters), different per id. */
  const result = (id: number) => log(170).replaceAll('line', `r${id}`).slice(0, 7000);
  const call = (i: number) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'run', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: result(i) },
  ];
  /** The backend refused the prompt for its length (the attempt loop's fact): it is over. */
  const refusedCtx = {
    ...ctx,
    refused: { now: new Set([PROMPT_OVER_WINDOW]), remembered: new Set<string>() },
  };
  const run = (messages: unknown[], refused = true) => {
    const req = { model: 'm', messages } as never;
    const d = toolResultCapPolicy.onRequest!(req, refused ? refusedCtx : ctx, req);
    if (d.action !== 'continue') throw new Error('continue expected');
    return d;
  };
  /** The prompt's tokens as kit/cut.ts estimates them (text, calls, a few a message). */
  const size = (messages: Array<{ role: string; content?: unknown; tool_calls?: unknown }>) =>
    messages.reduce(
      (n, m) => n + estimateTokens(String(m.content ?? '') + JSON.stringify(m.tool_calls ?? '')) + 4,
      0,
    );
  /** Each call is followed by its result, and each result follows its call (a valid history). */
  const pairs = (messages: Array<{ role: string; tool_calls?: unknown; tool_call_id?: string }>) => {
    let open: string[] = [];
    for (const m of messages) {
      if (m.role === 'tool') {
        expect(open).toContain(m.tool_call_id);
        open = open.filter((id) => id !== m.tool_call_id);
        continue;
      }
      expect(open).toEqual([]);
      open = ((m.tool_calls as Array<{ id: string }> | undefined) ?? []).map((c) => c.id);
    }
  };
  type Sent = Array<{ role: string; content?: unknown; tool_calls?: unknown }>;
  /**
   * A turn as the backend has it: a prompt over the window is refused and sent again cut; what
   * goes must fit and be a valid history. Returns it, and whether it changed from `prev` (and
   * where: the index of the first message that differs, -1 when none).
   */
  const sendTurn = (history: unknown[], turn: number, prev: Sent | undefined) => {
    let out = run(history.slice(), false).request.messages as Sent;
    if (size(out) >= 8192) out = run(history.slice()).request.messages as Sent;
    expect(size(out), `turn ${turn}`).toBeLessThan(8192);
    pairs(out as never);
    const first = prev ? prev.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(out[i])) : -1;
    return { out, first };
  };
  const cutAt = (messages: Array<{ role: string; content?: unknown }>) =>
    messages.flatMap((m, i) =>
      m.role === 'tool' && String(m.content).includes('toolproof left out') ? [i] : [],
    );

  it('keptTokens: a sixty-fourth of the window, 64 to 1,024', () => {
    expect(keptTokens(2048)).toBe(64);
    expect(keptTokens(8192)).toBe(128);
    expect(keptTokens(32768)).toBe(512);
    expect(keptTokens(1 << 20)).toBe(1024);
  });

  it('before any refusal, only a prompt past the window whatever its tokenizer (6 bytes a token) is cut, as a refusal would have it cut', () => {
    // Five results, ~35,000 bytes: over 8,192 tokens at 3 bytes a token, under at 4.5 (English, code).
    const maybe = [{ role: 'user', content: 'go' }, ...[0, 1, 2, 3, 4].flatMap(call)];
    expect(run(maybe, false).request.messages).toBe(maybe);
    expect(cutAt(run(maybe).request.messages).length).toBeGreaterThan(0);
    // Eight results, ~56,000 bytes: over 6 bytes a token of the window, over whatever the tokenizer.
    const surely = [{ role: 'user', content: 'go' }, ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap(call)];
    const ahead = run(surely, false).request.messages;
    expect(cutAt(ahead).length).toBeGreaterThan(0);
    // The same cuts, the same bytes, as after a refusal: a turn cut ahead and a turn cut after
    // its refusal send one prompt.
    expect(ahead).toEqual(run(surely).request.messages);
  });

  it('leaves a history that fits alone; cuts the older results of one that does not, the newest whole', () => {
    const fits = [{ role: 'user', content: 'go' }, ...call(0), ...call(1)];
    expect(run(fits).request.messages).toBe(fits);
    const over = [{ role: 'user', content: 'go' }, ...[0, 1, 2, 3, 4].flatMap(call)];
    const d = run(over);
    const out = d.request.messages;
    expect(cutAt(out).length).toBeGreaterThan(0);
    expect(cutAt(out)[0]).toBe(2); // the oldest first
    expect(out.at(-1)!.content).toBe(result(4));
    const total = out.reduce((n, m) => n + estimateTokens(String(m.content ?? '')) + 4, 0);
    expect(total).toBeLessThan(WINDOW);
    expect(d.effects).toEqual([
      { policy: 'tool-result-cap', kind: 'tool-result-cut', count: cutAt(out).length },
    ]);
  });

  it('the older results are bounded together, whatever their count, the same bytes each turn', () => {
    // an agent reading file after file: at a sixty-fourth of the window each and no total, 64 or
    // more older results were past the window by themselves (every later turn refused)
    const session = (n: number) => [
      { role: 'user', content: 'go' },
      ...Array.from({ length: n }, (_, i) => call(i)).flat(),
    ];
    const kept = (messages: Array<{ role: string; content?: unknown }>) =>
      messages
        .filter(
          (m) => m.role === 'tool' && !String(m.content).startsWith('[toolproof left out this tool result'),
        )
        .reduce((sum, m) => sum + estimateTokens(String(m.content)), 0);
    const at100 = run(session(100)).request.messages;
    const at400 = run(session(400)).request.messages;
    // what the results keep of their text: the older ones a sixteenth of the window, the newest
    // (the last half window and less than a quarter more) whole: as the step falls, one result
    // more or less
    expect(kept(at400)).toBeLessThanOrEqual(kept(at100) + estimateTokens(result(0)) + 200);
    expect(kept(at100)).toBeLessThan(WINDOW);
    // the older turns past an eighth of the window are left out, calls and all: the prompt as a
    // whole fits however many there were (the calls and notes of 56 turns were past 8k)
    expect(size(at400)).toBeLessThan(WINDOW);
    expect(size(at400)).toBeLessThanOrEqual(size(at100) + 2400);
    expect(at400.length).toBeLessThan(100);
    // the first older result keeps its head and tail; later ones are notes, and one says what follows
    expect(String(at400[2]!.content)).toContain('r0');
    const notes = at400.filter((m) => String(m.content).startsWith('[toolproof left out this tool result'));
    expect(notes.length).toBeGreaterThan(0);
    expect(notes.at(-1)!.content).toMatch(
      /^\[toolproof left out this tool result \(7000 characters, 149 lines\) and the older tool calls after it, with their results and the user messages right after those, to fit the model's context window\]$/,
    );
    // every call kept has its result right after it
    pairs(at400);
    // the next turn (within the same quarter window of growth): each earlier message the same bytes
    const t2 = run([...session(100), { role: 'user', content: 'go on' }]).request.messages;
    expect(t2.slice(0, at100.length)).toEqual(at100);
    // the turn that moves the boundary a step: the messages already older stay the same bytes
    const t3 = run(session(102)).request.messages;
    const older = at100.findLastIndex((m) => String(m.content).includes('toolproof left out')) + 1;
    expect(older).toBeGreaterThan(5);
    expect(t3.slice(0, older)).toEqual(at100.slice(0, older));
    expect(t3.length).toBeGreaterThan(older);
  });

  it('a long agent session, turn by turn: the prompt fits, and changes only at a boundary step, after what it left out', () => {
    // A read of ~1,600 characters a turn (~530 tokens at 3 bytes a token), 200 turns in an 8k
    // window: past ~55 the calls and notes alone were over it.
    const read = (k: number) =>
      Array.from({ length: 40 }, (_, l) => `file${k}.ts:${l}: v${l} = ${k * 100 + l};`)
        .join('\n')
        .padEnd(1600, '.');
    const history: unknown[] = [{ role: 'user', content: 'Read the files.' }];
    let prev: Sent | undefined;
    let bytes = 0;
    let steps = 0;
    let changes = 0;
    for (let turn = 0; turn < 200; turn++) {
      history.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `c${turn}`,
              type: 'function',
              function: { name: 'read', arguments: `{"path":"f${turn}.ts"}` },
            },
          ],
        },
        { role: 'tool', tool_call_id: `c${turn}`, content: read(turn) },
      );
      const grown = bytes + 1650;
      if (Math.floor(grown / (2048 * 3)) !== Math.floor(bytes / (2048 * 3))) steps++;
      bytes = grown;
      const { out, first } = sendTurn(history, turn, prev);
      if (first !== -1) changes++;
      prev = out;
    }
    expect(prev!.some((m) => String(m.content).includes('and the older tool calls after it'))).toBe(true);
    // once per quarter window of growth at most (and the first turn over the window)
    expect(changes).toBeGreaterThan(0);
    expect(changes).toBeLessThanOrEqual(steps + 1);
  });

  it("a user line after every result (Claude Code's reminders): the lines of the left-out turns go with them, the others stay in order, the prompt under the window at any length", () => {
    const reminder = (t: number) =>
      `<system-reminder>turn ${t}: keep the todo list current</system-reminder>`;
    const session = (n: number) => {
      const history: Array<Record<string, unknown>> = [{ role: 'user', content: 'go' }];
      for (let t = 0; t < n; t++) history.push(...call(t), { role: 'user', content: reminder(t) });
      return history;
    };
    const users = (ms: Array<{ role: string; content?: unknown }>) =>
      ms.filter((m) => m.role === 'user').map((m) => m.content);
    for (const n of [100, 300]) {
      const history = session(n);
      const out = run(history).request.messages as Array<{ role: string; content?: unknown }>;
      pairs(out);
      // The task stays, and a line stays exactly when the call before it does, in order.
      const kept = users(out);
      expect(kept[0]).toBe('go');
      const calls = new Set(
        out.flatMap((m) => ((m as { tool_calls?: Array<{ id: string }> }).tool_calls ?? []).map((c) => c.id)),
      );
      const lines = kept.slice(1) as string[];
      expect(lines).toEqual(
        Array.from({ length: n }, (_, t) => t)
          .filter((t) => calls.has(`c${t}`))
          .map(reminder),
      );
      expect(out.filter((m) => String(m.content).includes('and the older tool calls after it'))).toHaveLength(
        1,
      );
      // 300 reads with every line kept were 12,217 estimated tokens: over the 8k window for good
      expect(size(out), `${n} reads`).toBeLessThan(WINDOW);
    }
    // what is sent does not grow with the session: 300 reads cost what 100 do, within a step
    expect(size(run(session(300)).request.messages as never)).toBeLessThan(
      size(run(session(100)).request.messages as never) + 2400,
    );
  });

  it('a user line after every result, turn by turn: the prompt changes once a step at most, after what it already left out', () => {
    const history: Array<Record<string, unknown>> = [{ role: 'user', content: 'go' }];
    let prev: Sent | undefined;
    let changes = 0;
    let steps = 0;
    let bytes = 0;
    const step = (8192 / 4) * 3;
    for (let turn = 0; turn < 120; turn++) {
      history.push(...call(turn), {
        role: 'user',
        content: `<system-reminder>turn ${turn}</system-reminder>`,
      });
      const grown = JSON.stringify(history).length;
      steps += Math.floor(grown / step) - Math.floor(bytes / step);
      bytes = grown;
      const { out, first } = sendTurn(history, turn, prev);
      if (prev && first !== -1) {
        changes++;
        expect(first).toBeGreaterThan(
          prev.findLastIndex((m) => String(m.content).includes('toolproof left out')),
        );
      }
      prev = out;
    }
    expect(changes).toBeGreaterThan(0);
    expect(changes).toBeLessThanOrEqual(steps + 1);
  });

  it('older results: about linear time and memory over their count (x4, at most ~x4), what they keep bounded', () => {
    // Every other turn with a user line beside its result (a system reminder), left out with it.
    const calls = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0
        ? call(i)
        : [...call(i), { role: 'user', content: `<system-reminder>${i}</system-reminder>` }],
    );
    const make = (n: number) => ({
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        ...Array.from({ length: n }, (_, i) => calls[i % 50]!).flat(),
      ],
    });
    const s = measureScaling(
      make,
      (req) => {
        const d = toolResultCapPolicy.onRequest!(req as never, refusedCtx, req as never);
        if (d.action !== 'continue') throw new Error('continue expected');
        return d;
      },
      { from: 50, max: 1 << 14 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
    // what is sent of them: the text does not grow (the notes stop too, their turns left out)
    const ones = make(s.base);
    const fours = make(s.base * 4);
    const sent = (req: ReturnType<typeof make>) =>
      run(req.messages)
        .request.messages.filter((m) => !String(m.content).startsWith('[toolproof left out this tool result'))
        .reduce((sum, m) => sum + String(m.content ?? '').length, 0);
    expect(sent(fours) - sent(ones)).toBeLessThan(30 * 3 * s.base);
  });

  it('a session growing turn by turn: each cut is the same bytes on every later turn, and nothing before it changes', () => {
    const history: unknown[] = [{ role: 'user', content: 'go' }];
    let prev: Array<{ role: string; content?: unknown }> | undefined;
    let changes = 0;
    let shortChanges = 0;
    for (let turn = 0; turn < 40; turn++) {
      // Some turns bring a result, others a short exchange.
      if (turn % 3 === 0) history.push(...call(turn));
      else
        history.push(
          { role: 'assistant', content: `answer ${turn}` },
          { role: 'user', content: `next ${turn}` },
        );
      const out = run(history.slice()).request.messages as Array<{ role: string; content?: unknown }>;
      if (prev) {
        const first = prev.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(out[i]));
        if (first !== -1) {
          changes++;
          if (turn % 3 !== 0) shortChanges++;
          // Only what was whole before changes (a result cut, or turns left out from there), never
          // one cut or left out before, nor anything before those.
          expect(String(prev[first]!.content)).not.toContain('toolproof left out');
          expect(first).toBeGreaterThan(Math.max(-1, ...cutAt(prev)));
        }
        // What was cut stays cut, with the same bytes.
        for (const i of cutAt(prev)) expect(out[i]).toEqual(prev[i]);
      }
      prev = out;
    }
    // The prompt changes only when it grows past a quarter-window step: each result of ~2,300
    // tokens may take it past one, a short exchange (a few tokens) all but never does.
    expect(changes).toBeGreaterThan(0);
    expect(changes).toBeLessThanOrEqual(14);
    expect(shortChanges).toBeLessThanOrEqual(1);
  });
});
