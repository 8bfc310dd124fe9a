/**
 * The family kit: a toy START…END family built with delimitedEnvelope gets a correct
 * parse() and streaming parser from defineFamily, for any split.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineFamily } from '../../parsers/engine/define.js';
import { buildScanPlan } from '../../parsers/engine/scanner.js';
import { createEngineStream } from '../../parsers/engine/engine.js';
import { hermes } from '../../parsers/formats/hermes.js';
import type { StreamEvent } from '../../parsers/types.js';
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
const ctx = { tools: new Map([['f', { name: 'f' }]]) };

describe('defineFamily + delimitedEnvelope', () => {
  it('parse() returns calls and leftover content, null when the text is not in the family', () => {
    expect(toy.parse('pre <<CALL>>{"name": "f", "arguments": {"x": 1}}<<END>> post', ctx)).toEqual({
      calls: [{ name: 'f', arguments: { x: 1 } }],
      content: 'pre\npost',
    });
    expect(toy.parse('nothing here', ctx)).toBeNull();
  });

  it('parse() reports a broken envelope and keeps its text', () => {
    expect(toy.parse('<<CALL>>not json<<END>>', ctx)).toEqual({
      calls: [],
      content: '<<CALL>>not json<<END>>',
      broken: true,
    });
  });

  it('an unclosed envelope at the end of output is read, with a missing brace repaired', () => {
    expect(toy.parse('<<CALL>>{"name": "f", "arguments": {"a": [1]}', ctx)?.calls).toEqual([
      { name: 'f', arguments: { a: [1] } },
    ]);
  });

  it('createStream gives the same result for every split', () => {
    const text =
      'a <<CALL>>{"name": "f", "arguments": {"s": "😀<<END"}}<<END>> b <<CALL>>{"name": "g"}<<END>>';
    const whole = toy.parse(text, ctx);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: text.length }), { maxLength: 10 }), (cuts) => {
        const s = toy.createStream(ctx);
        const ev: StreamEvent[] = [];
        let prev = 0;
        for (const c of [...cuts].sort((x, y) => x - y)) {
          ev.push(...s.push(text.slice(prev, c)));
          prev = c;
        }
        ev.push(...s.push(text.slice(prev)), ...s.finish());
        const content = ev.map((e) => (e.type === 'content' ? e.text : '')).join('');
        const calls = ev.flatMap((e) => (e.type === 'call-end' ? [e.call] : []));
        expect({ content, calls }).toEqual({ content: whole?.content, calls: whole?.calls });
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
