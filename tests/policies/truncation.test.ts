/**
 * truncation (policies/truncation): `truncation: "auto"` leaves out the oldest messages of a
 * prompt over the window, never the leading system ones, the last one, or a result without its
 * call; the field never goes upstream.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../protocol/openai.js';
import {
  COMPACTION_REASON,
  leaveOutOldest,
  leftOutMessagesNote,
  truncationPolicy,
} from '../../policies/truncation/index.js';
import { PROMPT_OVER_WINDOW, type PolicyContext } from '../../policies/types.js';
import { compactionTurn } from '../../policies/kit/last-turn.js';
import { AGENT_COMPACTIONS, NOT_COMPACTIONS, sessionTools } from '../support/agent-compactions.js';
import { judge, measureScaling } from '../support/cost-scaling.js';
import { ctxWith, request } from './helpers.js';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });

/** `truncation` 'none': the request has no such field. */
function run(messages: ChatMessage[], ctx: PolicyContext, truncation: unknown = 'auto') {
  const sent = truncation === 'none' ? request({ messages }) : request({ messages, truncation });
  const d = truncationPolicy.onRequest!(sent, ctx, request({ messages }));
  if (d.action !== 'continue') throw new Error('rejected');
  return d;
}

const refused = (window: number) =>
  ctxWith({ refused: { now: new Set([PROMPT_OVER_WINDOW]), remembered: new Set() } } as never, {
    contextWindow: window,
  });

describe('leaveOutOldest', () => {
  it('keeps the leading system messages and the last message; a result goes with its call', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 's' },
      user('a'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'R', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c', content: 'r' },
      { role: 'tool', tool_call_id: 'c', content: 'r2' },
      user('b'),
    ];
    // The message that runs past the boundary goes when what is kept from it does not fit.
    expect(leaveOutOldest(undefined, messages, 3, 0)).toEqual({
      messages: [messages[0], user(leftOutMessagesNote(4)), messages[5]],
      count: 4,
    });
    // And stays when it does.
    expect(leaveOutOldest(undefined, messages, 3, 1e6)).toEqual({
      messages: [messages[0], user(leftOutMessagesNote(1)), ...messages.slice(2)],
      count: 1,
    });
    expect(leaveOutOldest(undefined, messages, 1, 0)).toBeUndefined();
    expect(leaveOutOldest(undefined, messages, 99, 0)?.messages.at(-1)).toEqual(user('b'));
  });
});

describe('truncation policy', () => {
  const long = Array.from({ length: 40 }, (_, i) => [
    user(`${i} ${'x'.repeat(4000)}`),
    assistant('ok'),
  ]).flat();

  it('the field never goes upstream; nothing is cut under the window or with "disabled"', () => {
    const small = run([user('hi')], refused(8192));
    expect(small.request).not.toHaveProperty('truncation');
    expect(small.effects).toEqual([]);
    const off = run(long, refused(8192), 'disabled');
    expect(off.request).not.toHaveProperty('truncation');
    expect(off.request.messages).toHaveLength(long.length);
    // Without a known window nothing can be placed (the attempt loop learns it from the refusal).
    expect(run(long, ctxWith(), 'auto').request.messages).toHaveLength(long.length);
    // Another value is not the API's: left as it came.
    expect(run([user('hi')], ctxWith(), 'later').request.truncation).toBe('later');
  });

  it('over the window: the oldest left out, a note in their place, the effect counted', () => {
    const d = run(long, refused(8192));
    const sent = d.request.messages;
    const note = sent[0]!;
    expect(note.role).toBe('user');
    const count = long.length - (sent.length - 1);
    expect(note.content).toBe(leftOutMessagesNote(count));
    expect(d.effects).toEqual([{ policy: 'truncation', kind: 'messages-left-out', count }]);
    expect(sent.at(-1)).toEqual(long.at(-1));
    // What is left fits: at most three quarters of the window at 4 bytes a token.
    expect(JSON.stringify(sent).length).toBeLessThan(8192 * 4 * 0.8);
    // One more small turn leaves out the same messages (the boundary moves in quarter steps).
    // (A long message that starts before the boundary stays while what is kept fits.)
    const next = run([...long, user('again')], refused(8192)).request.messages;
    expect(next.slice(0, sent.length)).toEqual(sent);
  });

  it('a long message the boundary runs through is cut to its head and tail, not left out, the same bytes each turn', () => {
    // Before, the turn after a long message (6,000 tokens of an 8k window, taken whole as the last)
    // left all of it out: what was kept from it did not fit.
    const ctx = refused(8192);
    const messages: ChatMessage[] = [{ role: 'system', content: 's' }];
    const seen: string[] = [];
    for (let t = 0; t < 10; t++) {
      messages.push(user(t === 5 ? `LONG ${'L'.repeat(24_000)} END` : `${t} ${'u'.repeat(2000)}`));
      const sent = run([...messages], ctx).request.messages;
      const long = sent.find((m) => String(m.content).startsWith('LONG'));
      if (t >= 5) {
        expect(long, `turn ${t}`).toBeDefined();
        seen.push(String(long!.content));
      }
      messages.push(assistant(`a${t} ${'a'.repeat(400)}`));
    }
    expect(seen[0]).toBe(`LONG ${'L'.repeat(24_000)} END`);
    expect(seen[1]).toMatch(/^LONG L+\n?\[\.\.\. toolproof left out \d+ of this message's 24009 characters/);
    expect(seen[1]!.endsWith('END')).toBe(true);
    expect(new Set(seen.slice(1)).size).toBe(1);
  });

  it("a compaction turn without the field is cut so too, its note saying why; 'disabled' is honoured", () => {
    const compaction = [...long, user('CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. Summarize.')];
    const d = run(compaction, refused(8192), 'none');
    const sent = d.request.messages;
    expect(sent[0]!.content).toBe(
      leftOutMessagesNote(compaction.length - (sent.length - 1), COMPACTION_REASON),
    );
    expect(sent.at(-1)).toEqual(compaction.at(-1));
    expect(d.effects).toHaveLength(1);
    // Codex's local compaction names no tools.
    const codex = [
      ...long,
      user('You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.'),
    ];
    expect(run(codex, refused(8192), 'none').request.messages.length).toBeLessThan(codex.length);
    expect(run(compaction, refused(8192), 'disabled').request.messages).toHaveLength(compaction.length);
    // Any other last turn over the window without the field is relayed (the backend's refusal).
    const other = run([...long, user('and then?')], refused(8192), 'none');
    expect(other.request.messages).toHaveLength(long.length + 1);
    expect(other.effects).toEqual([]);
  });

  describe("agents' real compactions over the window are cut (each agent's own words and shape)", () => {
    // Before, only Claude Code's (text only) and Codex's (its phrase) were known: the others were
    // relayed whole, refused, and the agent could not compact: every later turn was refused too.
    const history = long.slice(0, 30);
    const text = long.map((m) => `[${m.role}]: ${m.content}`).join('\n');
    for (const agent of AGENT_COMPACTIONS)
      it(agent.source, () => {
        const messages = agent.messages(history, text);
        const sent = request({ messages, ...(agent.tools ? { tools: sessionTools } : {}) });
        const d = truncationPolicy.onRequest!(sent, refused(8192), sent);
        if (d.action !== 'continue') throw new Error('rejected');
        const out = d.request.messages;
        expect(d.effects).toHaveLength(1);
        expect(JSON.stringify(out).length).toBeLessThan(8192 * 3);
        expect(JSON.stringify(out)).toContain('(a compaction over the window)');
        // The system prompt and the ask stay whole at either end of the last turn.
        if (messages[0]!.role === 'system') expect(out[0]).toEqual(messages[0]);
        const ask = JSON.stringify(messages.at(-1)!.content);
        const kept = JSON.stringify(out.at(-1)!.content);
        expect(kept.slice(0, 60)).toBe(ask.slice(0, 60));
        expect(kept.slice(-120)).toBe(ask.slice(-120));
      });
    for (const agent of NOT_COMPACTIONS)
      it(`no compaction, relayed whole: ${agent.source}`, () => {
        const messages = agent.messages(history, text);
        const sent = request({ messages, ...(agent.tools ? { tools: sessionTools } : {}) });
        const d = truncationPolicy.onRequest!(sent, refused(8192), sent);
        if (d.action !== 'continue') throw new Error('rejected');
        expect(d.request.messages).toEqual(messages);
        expect(d.effects).toEqual([]);
      });
  });

  it('budget: a compaction of 4x the messages costs about 4x, however long its last turn', () => {
    const ctx = refused(8192);
    const make = (n: number) => [
      ...Array.from({ length: n }, (_, i) => (i % 2 ? assistant('ok') : user(`q ${i} ${'y'.repeat(200)}`))),
      user(`${'z '.repeat(n * 20)} Do not call any tools.`),
    ];
    const measure = () => measureScaling(make, (m) => run(m, ctx, 'none'), { from: 2_000, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it("budget: reading a compaction's shape costs about 4x for 4x its instructions and last turn", () => {
    // Near misses of the summary words: each "summary" starts a bounded look for its object.
    const miss = (n: number) => 'a summary of the work so far, '.repeat(n);
    const make = (n: number) => ({
      model: 'm',
      messages: [
        ...Array.from({ length: 4 }, () => ({ role: 'system' as const, content: miss(n) })),
        {
          role: 'user' as const,
          content: Array.from({ length: 16 }, () => ({ type: 'text' as const, text: miss(n) })),
        },
      ],
    });
    const measure = () => measureScaling(make, (r) => compactionTurn(r as never), { from: 16, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('a user turn over the window by itself is cut without the field, the same bytes each turn; older turns that fit are not', () => {
    const paste = user(Array.from({ length: 3000 }, (_, i) => `line ${i} of the paste`).join('\n'));
    const first = run([paste], refused(8192), 'none');
    const cut = first.request.messages[0]!;
    expect(String(cut.content)).toMatch(
      /^line 0 of the paste\n[\s\S]*\[\.\.\. toolproof left out \d+ of this message's/,
    );
    expect(first.effects).toEqual([{ policy: 'truncation', kind: 'turn-cut', count: 1 }]);
    const next = run([paste, assistant('ok'), user('and?')], refused(8192), 'none');
    expect(next.request.messages[0]).toEqual(cut);
    // Not known over (no refusal, under six bytes a token of a 16k window): relayed as sent.
    expect(run([paste], ctxWith(undefined, { contextWindow: 16384 }), 'none').effects).toEqual([]);
    expect(run([paste], refused(16384), 'none').effects).toHaveLength(1);
    // Turns that each fit, together over: the backend's refusal, the cue to compact.
    const fits = [user('y'.repeat(20_000)), assistant('ok'), user('y'.repeat(20_000)), user('and?')];
    expect(run(fits, refused(8192), 'none').effects).toEqual([]);
    expect(run([paste], refused(8192), 'disabled').effects).toEqual([]);
  });

  it("refused with the backend's count: a turn is judged by the bytes a token it gave, dense text by the old bound still", () => {
    const counted = (window: number, bytesPerToken: number) =>
      ctxWith(
        { refused: { now: new Set([PROMPT_OVER_WINDOW]), remembered: new Set() }, bytesPerToken } as never,
        { contextWindow: window },
      );
    // ~3.5 bytes a token of an 8k window (28.7 KB): over at three bytes a token, under at four.
    const prose = user(Array.from({ length: 1300 }, (_, i) => `line ${i} of the log`).join('\n'));
    expect(run([prose], refused(8192), 'none').effects).toEqual([
      { policy: 'truncation', kind: 'turn-cut', count: 1 },
    ]);
    expect(run([prose], counted(8192, 4), 'none').effects).toEqual([]);
    // Past four bytes a token: over whatever the text.
    expect(run([prose], counted(6000, 4), 'none').effects).toHaveLength(1);
    // A count of dense text (under three bytes a token) is stricter than the old bound.
    expect(run([prose], counted(16384, 1.5), 'none').effects).toHaveLength(1);
    // Text denser than prose is judged by the old bound: the session's ratio may be of other text.
    const blob = user('QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo'.repeat(820));
    const cjk = user('日志内容很长'.repeat(1600));
    for (const dense of [blob, cjk]) {
      expect(run([dense], counted(8192, 4), 'none').effects).toHaveLength(1);
      // The same bytes each turn that carries it.
      const first = run([dense], counted(8192, 4), 'none').request.messages[0];
      expect(
        run([dense, assistant('ok'), user('and?')], counted(8192, 4), 'none').request.messages[0],
      ).toEqual(first);
    }
  });

  it('budget: cutting the turns over the window costs about 4x for 4x the turns', () => {
    // A 512-token window: every user turn is over it by itself, and cut.
    const ctx = refused(512);
    const make = (n: number) =>
      Array.from({ length: n }, (_, i) => (i % 2 ? assistant('ok') : user(`q ${i} ${'y'.repeat(3_000)}`)));
    const measure = () => measureScaling(make, (m) => run(m, ctx, 'none'), { from: 16, max: 8_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it("budget: judging 4x the turns by the count's bound, each read for its characters, costs about 4x", () => {
    // A 512-token window at six bytes a token: every turn between the bounds, scanned, and cut.
    const ctx = ctxWith(
      { refused: { now: new Set([PROMPT_OVER_WINDOW]), remembered: new Set() }, bytesPerToken: 6 } as never,
      { contextWindow: 512 },
    );
    const make = (n: number) =>
      Array.from({ length: n }, (_, i) => (i % 2 ? assistant('ok') : user(`q ${i} ${'y'.repeat(3_000)}`)));
    const measure = () => measureScaling(make, (m) => run(m, ctx, 'none'), { from: 16, max: 8_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
    expect(run(make(2), ctx, 'none').effects).toHaveLength(1);
  });

  // redteam26: a turn of several long text parts shares the cut (each part cut to its share).
  it('a turn of two long text parts over the window: both cut, to about half the cut each', () => {
    const long = (tag: string) => ({ type: 'text' as const, text: `${tag} ${'z'.repeat(30_000)}` });
    const turn = {
      role: 'user',
      content: [long('a'), long('b'), { type: 'text', text: 'which?' }],
    } as ChatMessage;
    const out = run([turn], refused(8192), 'none');
    const parts = (out.request.messages!.at(-1) as { content: Array<{ text: string }> }).content;
    expect(parts[0]!.text).toContain('toolproof left out');
    expect(parts[1]!.text).toContain('toolproof left out');
    expect(parts[2]!.text).toBe('which?');
    // Half the window between them (3 characters a token): about a quarter of it each.
    for (const p of parts.slice(0, 2)) expect(p.text.length).toBeLessThan(((8192 / 4) * 3 * 11) / 10);
  });

  it('budget: a turn of 4x the long text parts costs about 4x', () => {
    const ctx = refused(512);
    const make = (n: number) => [
      {
        role: 'user',
        content: Array.from({ length: n }, (_, i) => ({
          type: 'text',
          text: `p ${i} ${'y'.repeat(600 + (i % 7))}`,
        })),
      } as ChatMessage,
    ];
    const measure = () => measureScaling(make, (m) => run(m, ctx, 'none'), { from: 16, max: 16_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('budget: a conversation of 4x the messages costs about 4x', () => {
    const ctx = refused(8192);
    const make = (n: number) =>
      Array.from({ length: n }, (_, i) => (i % 2 ? assistant('ok') : user(`q ${i} ${'y'.repeat(200)}`)));
    const measure = () => measureScaling(make, (m) => run(m, ctx), { from: 2_000, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
