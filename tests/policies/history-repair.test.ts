import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS, type HistoryRepairSettings } from '../../protocol/settings.js';
import { historyRepairPolicy } from '../../policies/history-repair/index.js';
import {
  BRIDGE_MESSAGE_CONTENT,
  OPENING_USER_CONTENT,
  repairHistory,
} from '../../policies/history-repair/repair.js';
import { buildNineCharIdMap } from '../../policies/history-repair/nine-char-ids.js';
import { ctxWith, request } from './helpers.js';

const base = DEFAULT_MODEL_SETTINGS.historyRepair;
const settings = (o: Partial<HistoryRepairSettings> = {}): HistoryRepairSettings => ({ ...base, ...o });

function kinds(effects: { kind: string; count?: number }[]): Record<string, number> {
  return Object.fromEntries(effects.map((e) => [e.kind, e.count ?? 1]));
}

/** The invariants every repaired history must satisfy. */
function assertInvariants(messages: ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === 'tool') {
      // A tool message sits in a run right after an assistant with a call of its id.
      let j = i - 1;
      while (j >= 0 && messages[j]!.role === 'tool') j--;
      const owner = messages[j];
      expect(owner?.role).toBe('assistant');
      expect(owner?.tool_calls?.map((c) => c.id)).toContain(m.tool_call_id);
    }
    if (m.role === 'assistant' && m.tool_calls) {
      const answered = new Set<string>();
      for (let k = i + 1; k < messages.length && messages[k]!.role === 'tool'; k++) {
        answered.add(messages[k]!.tool_call_id as string);
      }
      for (const c of m.tool_calls) {
        expect(typeof c.id).toBe('string');
        expect(answered.has(c.id)).toBe(true);
        expect(typeof c.function.arguments).toBe('string');
        const parsed = JSON.parse(c.function.arguments) as unknown;
        expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)).toBe(true);
      }
    }
  }
}

function assistantWith(calls: unknown[], content: string | null = ''): ChatMessage {
  return { role: 'assistant', content, tool_calls: calls as ChatMessage['tool_calls'] };
}

describe('history-repair', () => {
  it('leaves a valid history untouched and reports nothing', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'weather?' },
      assistantWith([{ id: 'a', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } }]),
      { role: 'tool', tool_call_id: 'a', content: 'sunny' },
      { role: 'assistant', content: 'It is sunny.' },
    ];
    const r = repairHistory(messages, settings());
    expect(r.effects).toEqual([]);
    expect(r.messages).toEqual(messages);
    const d = historyRepairPolicy.onRequest!(request({ messages }), ctxWith(), request({ messages }));
    expect(d.action).toBe('continue');
    if (d.action === 'continue') expect(d.request.messages).toBe(messages);
  });

  it('synthesizes missing results in place, in call order, before the next non-tool message', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'q' },
      assistantWith([
        { id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } },
        { id: 'b', type: 'function', function: { name: 'y', arguments: '{}' } },
        { id: 'c', type: 'function', function: { name: 'z', arguments: '{}' } },
      ]),
      { role: 'tool', tool_call_id: 'b', content: 'B' },
      { role: 'user', content: 'next' },
    ];
    const r = repairHistory(messages, settings());
    expect(r.messages.map((m) => [m.role, m.tool_call_id ?? null, m.content])).toEqual([
      ['user', null, 'q'],
      ['assistant', null, ''],
      ['tool', 'a', base.missingResultContent],
      ['tool', 'b', 'B'],
      ['tool', 'c', base.missingResultContent],
      ['user', null, 'next'],
    ]);
    expect(kinds(r.effects)).toEqual({ 'synthesized-result': 2 });
    assertInvariants(r.messages);
  });

  it('answers a dangling call at the very end of the history', () => {
    const r = repairHistory(
      [
        { role: 'user', content: 'q' },
        assistantWith([{ id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } }]),
      ],
      settings(),
    );
    expect(r.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'a',
      content: base.missingResultContent,
    });
  });

  it('reorders results to call order (positional templates pair by order)', () => {
    const r = repairHistory(
      [
        assistantWith([
          { id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'y', arguments: '{}' } },
        ]),
        { role: 'tool', tool_call_id: 'b', content: 'B' },
        { role: 'tool', tool_call_id: 'a', content: 'A' },
      ],
      settings(),
    );
    expect(r.messages.slice(1).map((m) => m.content)).toEqual(['A', 'B']);
    expect(kinds(r.effects)).toEqual({ 'reordered-results': 1 });
  });

  it('turns orphan results into notes (as-user / as-assistant) or drops them, always reported', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'tool', tool_call_id: 'ghost', content: 'boo' },
      assistantWith([{ id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } }]),
      { role: 'tool', tool_call_id: 'a', content: 'A' },
      { role: 'tool', tool_call_id: 'zzz', content: 'stray' },
    ];
    const asUser = repairHistory(messages, settings());
    expect(asUser.messages[1]).toEqual({
      role: 'user',
      content: '[Result of tool call ghost, which matches no earlier tool call]\nboo',
    });
    expect(asUser.messages.at(-1)?.role).toBe('user');
    expect(String(asUser.messages.at(-1)?.content)).toContain('stray');
    expect(kinds(asUser.effects)).toEqual({ 'orphan-result': 2 });
    assertInvariants(asUser.messages);

    const asAssistant = repairHistory(messages, settings({ orphanResults: 'as-assistant' }));
    expect(asAssistant.messages[1]?.role).toBe('assistant');

    const dropped = repairHistory(messages, settings({ orphanResults: 'drop' }));
    expect(dropped.messages.some((m) => String(m.content).includes('stray'))).toBe(false);
    expect(kinds(dropped.effects)).toEqual({ 'orphan-result': 2 });
    assertInvariants(dropped.messages);
  });

  it('gives calls without ids deterministic ids and pairs id-less results in order', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'q' },
      assistantWith([
        { type: 'function', function: { name: 'x', arguments: '{}' } },
        { function: { name: 'y', arguments: '{}' } },
      ]),
      { role: 'tool', content: 'X' },
      { role: 'tool', content: 'Y' },
    ];
    const r = repairHistory(messages, settings());
    const calls = r.messages[1]?.tool_calls ?? [];
    expect(calls.map((c) => c.id)).toEqual(['call_h1_0', 'call_h1_1']);
    expect(calls[1]?.type).toBe('function');
    expect(r.messages.slice(2).map((m) => [m.tool_call_id, m.content])).toEqual([
      ['call_h1_0', 'X'],
      ['call_h1_1', 'Y'],
    ]);
    expect(kinds(r.effects)).toMatchObject({ 'missing-id': 2, 'missing-result-id': 2 });
    expect(repairHistory(messages, settings())).toEqual(r);
  });

  it('serializes object arguments, keeps object text verbatim; repairs or quotes invalid ones', () => {
    const messages: ChatMessage[] = [
      assistantWith([
        { id: 'a', type: 'function', function: { name: 'x', arguments: { city: 'Paris' } } },
        // Issue 18: the model's own text, spacing and big integer included, is what it sees again.
        { id: 'b', type: 'function', function: { name: 'y', arguments: '{ "n" : 12345678901234567890 }' } },
        { id: 'c', type: 'function', function: { name: 'z', arguments: "{city: 'Rome',}" } },
        { id: 'd', type: 'function', function: { name: 'w', arguments: 'not json at all' } },
        { id: 'e', type: 'function', function: { name: 'v', arguments: ' ' } },
      ]),
      { role: 'tool', tool_call_id: 'a', content: 'A' },
      { role: 'tool', tool_call_id: 'd', content: 'D' },
    ];
    const r = repairHistory(messages, settings());
    const args = r.messages[0]?.tool_calls?.map((c) => c.function.arguments);
    expect(args).toEqual([
      '{"city":"Paris"}',
      '{ "n" : 12345678901234567890 }',
      '{"city": "Rome"}', // jsonrepair's text, numbers as written
      '{}',
      '{}',
    ]);
    const d = r.messages.find((m) => m.tool_call_id === 'd');
    expect(String(d?.content)).toContain('not json at all');
    expect(String(d?.content).endsWith('\nD')).toBe(true);
    expect(kinds(r.effects)).toMatchObject({
      'object-arguments': 1,
      'canonicalized-arguments': 1,
      'repaired-arguments': 1,
      'invalid-arguments': 1,
      'synthesized-result': 3,
    });
    assertInvariants(r.messages);
  });

  it('keeps the raw text of invalid arguments in a synthesized result too', () => {
    const r = repairHistory(
      [assistantWith([{ id: 'a', type: 'function', function: { name: 'x', arguments: '[1,2' } }])],
      settings(),
    );
    expect(String(r.messages[1]?.content)).toContain('[1,2');
  });

  it('maps ids to 9 alphanumerics consistently for calls and results', () => {
    const messages: ChatMessage[] = [
      assistantWith([
        {
          id: 'call_8f2b3d9e0a1c4f6b8d2e3a5c7b9d0e1f',
          type: 'function',
          function: { name: 'x', arguments: '{}' },
        },
        { id: 'abcDEF123', type: 'function', function: { name: 'y', arguments: '{}' } },
      ]),
      { role: 'tool', tool_call_id: 'call_8f2b3d9e0a1c4f6b8d2e3a5c7b9d0e1f', content: 'X' },
      { role: 'tool', tool_call_id: 'abcDEF123', content: 'Y' },
    ];
    const r = repairHistory(messages, settings({ nineCharIds: true }));
    const ids = r.messages[0]?.tool_calls?.map((c) => c.id) ?? [];
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(ids[1]).toBe('abcDEF123');
    expect(r.messages.slice(1).map((m) => m.tool_call_id)).toEqual(ids);
    expect(kinds(r.effects)).toEqual({ 'nine-char-id': 1 });
    expect(repairHistory(messages, settings({ nineCharIds: true }))).toEqual(r);
  });

  it('nine-char ids of earlier turns do not depend on later ones (the prompt prefix holds)', () => {
    // A later client id that happens to equal an earlier id's hash: before, fitting ids were
    // reserved first, so appending it re-salted the earlier id and rewrote an earlier turn.
    const hashed = buildNineCharIdMap(['call_a']).get('call_a')!;
    const before = buildNineCharIdMap(['call_a']);
    const after = buildNineCharIdMap(['call_a', hashed]);
    expect(after.get('call_a')).toBe(before.get('call_a'));
    expect(after.get(hashed)).not.toBe(hashed);
    expect(after.get(hashed)).toMatch(/^[A-Za-z0-9]{9}$/);
  });

  it('nine-char mapping is collision-checked', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `call_${i}`);
    const map = buildNineCharIdMap(ids);
    expect(new Set(map.values()).size).toBe(ids.length);
  });

  it('bridges tool -> user with an assistant message', () => {
    const r = repairHistory(
      [
        assistantWith([{ id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } }]),
        { role: 'tool', tool_call_id: 'a', content: 'A' },
        { role: 'user', content: 'thanks' },
      ],
      settings({ bridgeToolToUser: true }),
    );
    expect(r.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'user']);
    expect(r.messages[2]?.content).toBe(BRIDGE_MESSAGE_CONTENT);
    expect(kinds(r.effects)).toEqual({ 'bridge-message': 1 });
  });

  it('normalizes content beside tool calls ("null" / "empty")', () => {
    const msgs = (content: string | null | undefined): ChatMessage[] => {
      const m: ChatMessage = {
        role: 'assistant',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } }],
      };
      if (content !== undefined) m.content = content;
      return [m, { role: 'tool', tool_call_id: 'a', content: 'A' }];
    };
    expect(repairHistory(msgs(''), settings({ toolCallContent: 'null' })).messages[0]?.content).toBeNull();
    expect(repairHistory(msgs(undefined), settings({ toolCallContent: 'empty' })).messages[0]?.content).toBe(
      '',
    );
    expect(repairHistory(msgs(null), settings({ toolCallContent: 'empty' })).messages[0]?.content).toBe('');
    // Real text is never replaced.
    expect(
      repairHistory(msgs('let me check'), settings({ toolCallContent: 'null' })).messages[0]?.content,
    ).toBe('let me check');
    expect(repairHistory(msgs(''), settings({ toolCallContent: 'keep' })).effects).toEqual([]);
  });

  it('merges consecutive same-role messages when asked (text and parts)', () => {
    const r = repairHistory(
      [
        { role: 'user', content: 'a' },
        { role: 'user', content: [{ type: 'text', text: 'b' }] },
        { role: 'assistant', content: 'c' },
        { role: 'assistant', content: 'd' },
      ],
      settings({ mergeSameRole: true }),
    );
    expect(r.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      { role: 'assistant', content: 'c\n\nd' },
    ]);
    expect(kinds(r.effects)).toEqual({ 'merged-messages': 2 });
  });

  it("puts a user message before a first turn that is the assistant's, for alternating templates only", () => {
    // A resumed compaction: the summary opens the conversation (Mistral: roles must alternate).
    const resumed: ChatMessage[] = [
      { role: 'system', content: 's' },
      { role: 'assistant', content: 'summary' },
      { role: 'user', content: 'go on' },
    ];
    const r = repairHistory(resumed, settings({ mergeSameRole: true }));
    expect(r.messages).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: OPENING_USER_CONTENT },
      { role: 'assistant', content: 'summary' },
      { role: 'user', content: 'go on' },
    ]);
    expect(kinds(r.effects)).toEqual({ 'opening-user': 1 });
    // The same bytes on the next turn, and nothing more once it is there.
    const next = repairHistory(
      [...resumed, { role: 'assistant', content: 'ok' }],
      settings({ mergeSameRole: true }),
    );
    expect(next.messages.slice(0, 4)).toEqual(r.messages);
    expect(repairHistory(r.messages, settings({ mergeSameRole: true })).effects).toEqual([]);
    // Calls before the first turn are not turns (Mistral's template skips them): a user opens it.
    const calls: ChatMessage[] = [
      assistantWith([{ id: 'abcdefghi', type: 'function', function: { name: 'a', arguments: '{}' } }]),
      { role: 'tool', tool_call_id: 'abcdefghi', content: 'r' },
      { role: 'user', content: 'q' },
    ];
    expect(kinds(repairHistory(calls, settings({ mergeSameRole: true })).effects)).toEqual({});
    // Without the setting the history is the client's.
    expect(repairHistory(resumed, settings({})).messages).toEqual(resumed);
  });

  it('is idempotent on a messy history with every option on', () => {
    const all = settings({
      nineCharIds: true,
      bridgeToolToUser: true,
      toolCallContent: 'null',
      mergeSameRole: true,
    });
    const messy: ChatMessage[] = [
      { role: 'system', content: 's' },
      { role: 'tool', tool_call_id: 'x', content: 'orphan' },
      { role: 'user', content: 'q' },
      assistantWith([
        { function: { name: 'a', arguments: { k: 1 } } },
        { id: 'dup', type: 'function', function: { name: 'b', arguments: 'broken {' } },
        { id: 'dup', type: 'function', function: { name: 'c', arguments: '' } },
      ]),
      { role: 'tool', content: 'r1' },
      { role: 'tool', tool_call_id: 'unknown', content: 'r?' },
      { role: 'user', content: 'more' },
      { role: 'user', content: 'and more' },
      assistantWith([], 'hmm'),
    ];
    const once = repairHistory(messy, all);
    assertInvariants(once.messages);
    const twice = repairHistory(once.messages, all);
    expect(twice.messages).toEqual(once.messages);
    expect(twice.effects).toEqual([]);
  });

  it('property: any history repairs to one satisfying the invariants, and repairing again is a no-op', () => {
    const id = fc.option(fc.constantFrom('a', 'b', 'c', 'call_1', 'x9'), { nil: undefined });
    const args = fc.oneof(
      fc.constant('{}'),
      fc.constant('{"k": 1}'),
      fc.constant('{bad'),
      fc.constant(''),
      fc.constant({ o: true }),
      fc.string(),
    );
    const toolCall = fc.record({ id, args, name: fc.constantFrom('f', 'g') }).map((c) => {
      const out: Record<string, unknown> = {
        type: 'function',
        function: { name: c.name, arguments: c.args },
      };
      if (c.id !== undefined) out.id = c.id;
      return out;
    });
    const message: fc.Arbitrary<ChatMessage> = fc.oneof(
      fc.record({ role: fc.constant('user'), content: fc.string() }),
      fc.record({ role: fc.constant('assistant'), content: fc.option(fc.string(), { nil: null }) }),
      fc.record({ calls: fc.array(toolCall, { maxLength: 3 }) }).map((r) => assistantWith(r.calls)),
      fc.record({ id, content: fc.string() }).map((r) => {
        const m: ChatMessage = { role: 'tool', content: r.content };
        if (r.id !== undefined) m.tool_call_id = r.id;
        return m;
      }),
    );
    const opts = fc.record({
      nineCharIds: fc.boolean(),
      bridgeToolToUser: fc.boolean(),
      mergeSameRole: fc.boolean(),
      toolCallContent: fc.constantFrom('keep', 'null', 'empty') as fc.Arbitrary<
        HistoryRepairSettings['toolCallContent']
      >,
      orphanResults: fc.constantFrom('as-user', 'as-assistant', 'drop') as fc.Arbitrary<
        HistoryRepairSettings['orphanResults']
      >,
    });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 10 }), opts, (messages, o) => {
        const s = settings(o);
        const once = repairHistory(messages, s);
        assertInvariants(once.messages);
        if (o.nineCharIds) {
          for (const m of once.messages) {
            for (const c of m.tool_calls ?? []) expect(c.id).toMatch(/^[A-Za-z0-9]{9}$/);
          }
        }
        const twice = repairHistory(once.messages, s);
        expect(twice.messages).toEqual(once.messages);
        expect(twice.effects).toEqual([]);
        expect(repairHistory(messages, s)).toEqual(once);
      }),
      { numRuns: 300 },
    );
  });
});

describe('history repair of conversations without tools (the shortcut)', () => {
  // A history with no tool message and no tool_calls is given back as it is without the full
  // repair. Guard: the full repair of the same history with one well-formed call and its result
  // appended (which sends it down the full path and changes nothing itself) agrees on every
  // message before the pair and on the effects.
  it('gives what the full repair gives (property)', () => {
    const message: fc.Arbitrary<ChatMessage> = fc.record({
      role: fc.constantFrom('user', 'assistant', 'system', 'developer'),
      content: fc.oneof(fc.string({ maxLength: 5 }), fc.constant(null), fc.constant('')),
    }) as fc.Arbitrary<ChatMessage>;
    const opts = fc.record({
      nineCharIds: fc.boolean(),
      bridgeToolToUser: fc.boolean(),
      mergeSameRole: fc.boolean(),
      // Not 'empty': it would fill in the appended call's null content.
      toolCallContent: fc.constantFrom('keep', 'null') as fc.Arbitrary<
        HistoryRepairSettings['toolCallContent']
      >,
    });
    const pair: ChatMessage[] = [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'abcdefghi', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'abcdefghi', content: 'ok' },
    ];
    fc.assert(
      fc.property(fc.array(message, { maxLength: 8 }), opts, (messages, o) => {
        const s = settings(o);
        const short = repairHistory(messages, s);
        const full = repairHistory([...messages, ...pair], s);
        expect(short.messages).toEqual(full.messages.slice(0, full.messages.length - 2));
        expect(short.effects).toEqual(full.effects);
        expect(short.messages).not.toBe(messages);
      }),
      { numRuns: 500 },
    );
  });
});

describe('history repair of a long turn of calls (issue 18: 30k calls from /v1/responses)', () => {
  const turn = (n: number): ChatMessage[] => [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: null,
      tool_calls: Array.from({ length: n }, (_, i) => ({
        id: `c${i}`,
        type: 'function' as const,
        function: { name: 'f', arguments: '{"a":1}' },
      })),
    },
  ];

  it("keeps each call that needs no change as the client's own object, not a copy", () => {
    const given = turn(3);
    const { messages } = repairHistory(given, settings());
    const calls = messages[1]!.tool_calls!;
    expect(calls).toEqual(given[1]!.tool_calls);
    for (const [i, c] of calls.entries()) expect(c).toBe(given[1]!.tool_calls![i]);
    // A call that changes is a copy, and the client's object is left as it was.
    const odd = turn(1);
    const oddCall = odd[1]!.tool_calls![0]! as { type?: string };
    delete oddCall.type;
    const repaired = repairHistory(odd, settings()).messages[1]!.tool_calls![0]!;
    expect(repaired).not.toBe(oddCall);
    expect(repaired.type).toBe('function');
    expect(oddCall.type).toBeUndefined();
  });

  it('synthesizes a result for each of 30k unanswered calls, in order', () => {
    const { messages, effects } = repairHistory(turn(30_000), settings());
    expect(messages).toHaveLength(2 + 30_000);
    expect(messages[2]!.tool_call_id).toBe('c0');
    expect(messages.at(-1)!.tool_call_id).toBe('c29999');
    expect(kinds(effects)).toEqual({ 'synthesized-result': 30_000 });
  });
});
