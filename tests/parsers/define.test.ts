/**
 * The family kit: a toy START…END family built with delimitedEnvelope, run by the engine on
 * its own, reads calls, keeps a broken envelope as text and streams equal to one piece.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineFamily } from '../../parsers/engine/define.js';
import { buildScanPlan } from '../../parsers/engine/scanner.js';
import { createEngineStream } from '../../parsers/engine/engine.js';
import { hermes } from '../../parsers/formats/hermes.js';
import { collectEvents } from '../../parsers/recover.js';
import { callsFromJsonBody, delimitedEnvelope } from '../../parsers/kit/envelope.js';

const toy = defineFamily({
  name: 'toy',
  markers: ['<<CALL>>'],
  priority: 50,
  backend: { vllm: 'toy' },
  match: delimitedEnvelope({
    end: '<<END>>',
    parseBody: (body, _ctx, info) => callsFromJsonBody(body, info.truncated),
  }),
});
// f's arguments as these tests send them (a missing brace closed is read only for arguments that fit)
const ctx = {
  tools: new Map([
    ['f', { name: 'f', parameters: { type: 'object', properties: { a: { type: 'array' }, x: {}, s: {} } } }],
  ]),
};

const toyPlan = buildScanPlan([toy]);

/** The toy family alone through the engine, fed in `pieces`. */
function run(pieces: readonly string[]) {
  let n = 0;
  const s = createEngineStream({ plan: toyPlan, tools: ctx.tools, newId: () => `call_${n++}` });
  const events = [...pieces.flatMap((p) => s.push({ content: p })), ...s.finish()];
  const r = collectEvents(events, s);
  return {
    content: r.content,
    calls: r.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
    leaks: r.leaks.map((l) => `${l.outcome}:${l.reason ?? ''}`),
  };
}

describe('defineFamily + delimitedEnvelope', () => {
  it('reads calls and joins the leftover content', () => {
    expect(run(['pre <<CALL>>{"name": "f", "arguments": {"x": 1}}<<END>> post'])).toEqual({
      calls: [{ name: 'f', arguments: { x: 1 } }],
      content: 'pre\npost',
      leaks: ['recovered:'],
    });
    expect(run(['nothing here'])).toEqual({ calls: [], content: 'nothing here', leaks: [] });
  });

  it('a broken envelope keeps its text and is recorded', () => {
    expect(run(['<<CALL>>not json<<END>>'])).toEqual({
      calls: [],
      content: '<<CALL>>not json<<END>>',
      leaks: ['unrecovered:body is not JSON'],
    });
  });

  it('an unclosed envelope at the end of output is read, with a missing brace repaired', () => {
    expect(run(['<<CALL>>{"name": "f", "arguments": {"a": [1]}']).calls).toEqual([
      { name: 'f', arguments: { a: [1] } },
    ]);
  });

  it('gives the same result for every split', () => {
    const text =
      'a <<CALL>>{"name": "f", "arguments": {"s": "😀<<END"}}<<END>> b <<CALL>>{"name": "g"}<<END>>';
    const whole = run([text]);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: text.length }), { maxLength: 10 }), (cuts) => {
        const pieces: string[] = [];
        let prev = 0;
        for (const c of [...cuts].sort((x, y) => x - y)) {
          pieces.push(text.slice(prev, c));
          prev = c;
        }
        pieces.push(text.slice(prev));
        expect(run(pieces)).toEqual(whole);
      }),
      { numRuns: 200, seed: 3 },
    );
  });

  it('the engine holds back a partial marker and a need-more envelope, and nothing else', () => {
    const plan = buildScanPlan([toy, hermes]);
    const s = createEngineStream({ plan, tools: ctx.tools, newId: () => 'id' });
    expect(s.push({ content: 'hello <<CA' })).toEqual([{ type: 'content', text: 'hello' }]);
    expect(s.push({ content: 'LL>>{"name": "f"' })).toEqual([]);
    // the complete call (and what follows it) waits for the end: a bare </think> would make it a draft
    expect(s.push({ content: '}<<END>> bye' })).toEqual([]);
    expect(s.finish().map((e) => e.type)).toEqual(['call-start', 'call-args', 'call-end', 'content']);
  });
});
