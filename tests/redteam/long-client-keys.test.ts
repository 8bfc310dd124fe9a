/**
 * Maps and Sets keyed by strings a client sends: V8 hashes a string past 16,383 characters by
 * its length alone, so many long ones alike but for their ends compare each with all the others.
 * Measured through the real server (tests/redteam/long-keys-probe, 20 KB strings differing at
 * their last characters, CPU of one request at 250 vs 1,000 of them): a chat history of n calls
 * with such ids, answered by n tool results, cost 372 ms vs 3,256 ms (history-repair's pairing
 * by id, its Sets of ids seen); the Messages door's tool_use ids the same (457 vs 5,258 ms);
 * 1,000 tools so named 2.9-4.2 s on all three doors (every Map of the declared names). Ids are
 * now keyed by digest past 4,096 characters (protocol/string-set.ts StringMap); tool names are
 * capped at MAX_TOOL_NAME_CHARS (4,096; OpenAI's own API stops at 64), a 400 naming the field.
 */
import { describe, expect, it } from 'vitest';
import { fitsSchema } from '../../parsers/kit/schema-values.js';
import { repairHistory } from '../../policies/history-repair/repair.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { StringMap } from '../../protocol/string-set.js';
import { MAX_TOOL_NAME_CHARS } from '../../protocol/tools.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('done')));

/** `n` strings of 20,006 characters, alike but for their last six. */
const longs = (n: number) =>
  Array.from({ length: n }, (_, i) => `${'a'.repeat(20_000)}${String(i).padStart(6, '0')}`);

const history = (ids: string[]): ChatMessage[] => [
  { role: 'user', content: 'go' },
  {
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({
      id,
      type: 'function' as const,
      function: { name: 'f', arguments: '{}' },
    })),
  },
  ...ids.map((id): ChatMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' })),
];

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

describe('maps and sets of long client strings', () => {
  it('a StringMap holds long keys apart and finds them again', () => {
    const [a, b] = longs(2) as [string, string];
    const m = new StringMap<number>().set(a, 1).set('short', 2).set(a, 3);
    expect([m.size, m.get(a), m.get(b), m.get('short'), m.has(b)]).toEqual([2, 3, undefined, 2, false]);
    expect([...m.entries()]).toEqual([
      [a, 3],
      ['short', 2],
    ]);
  });

  it('history-repair: n long call ids and their results pair up in linear CPU (x1 vs x4)', () => {
    const settings = { ...DEFAULT_MODEL_SETTINGS.historyRepair, nineCharIds: true };
    const ids = longs(2);
    const out = repairHistory(
      history([ids[0]!, ids[0]!, ids[1]!]).slice(0, 2).concat(history(ids).slice(2)),
      settings,
    );
    // the duplicated id gets a fresh one; each result still answers its own call
    expect(out.messages.filter((m) => m.role === 'tool').length).toBe(3);
    const s = measureScaling(
      (n) => history(longs(n)),
      (m) => repairHistory(m, settings),
      { from: 16, max: 1024 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('a leaked call checked against an enum of n long values: linear CPU in n (x1 vs x4)', () => {
    const tool = (values: string[]) => ({
      name: 'f',
      parameters: { type: 'object', properties: { a: { type: 'string', enum: values.slice() } } },
    });
    const [a, b] = longs(2) as [string, string];
    expect([
      fitsSchema({ a }, tool([a])),
      fitsSchema({ a: b }, tool([a])),
      fitsSchema({ a: 1 }, tool([a])),
    ]).toEqual([true, false, false]);
    // a fresh enum array each run: the Set is built per array
    const s = measureScaling(longs, (values) => fitsSchema({ a: values.at(-1) }, tool(values)), {
      from: 16,
      max: 1024,
    });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it(`a tool name past ${MAX_TOOL_NAME_CHARS} characters is a 400 naming it on every door; one at it is served`, async () => {
    const long = 'a'.repeat(MAX_TOOL_NAME_CHARS + 1);
    const at = 'b'.repeat(MAX_TOOL_NAME_CHARS);
    const chat = (name: string) =>
      post('/v1/chat/completions', {
        model: 'm1',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name, parameters: { type: 'object' } } }],
      });
    const messages = (name: string) =>
      post('/v1/messages', {
        model: 'm1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name, input_schema: { type: 'object' } }],
      });
    const responses = (tools: unknown[]) => post('/v1/responses', { model: 'm1', input: 'hi', tools });
    const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });
    const refused = [
      await chat(long),
      await messages(long),
      await responses([fn(long)]),
      await responses([{ type: 'namespace', name: long, tools: [fn('f')] }]),
      await responses([{ type: 'custom', name: long }]),
    ];
    for (const r of refused) {
      expect(r.status, r.text).toBe(400);
      expect(r.text).toContain(String(MAX_TOOL_NAME_CHARS));
      expect(r.text).toMatch(/name/);
    }
    for (const r of [await chat(at), await messages(at), await responses([fn(at)])])
      expect(r.status, r.text).toBe(200);
  }, 30_000);
});
