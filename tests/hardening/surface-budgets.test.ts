/**
 * Issue 27, "fuzz the surfaces": every parser of the registry (its table:
 * surface-budgets-parsers-1/2.test.ts) and every request rewrite, fed
 * random inputs scaled 1x and 4x along each size a client (or a model) controls, must cost at
 * most about 4x, in time and in retained memory (tests/support/cost-scaling.ts: medians,
 * interleaved runs, x10 plus a constant, so a quadratic (x16) is flagged and load is not).
 * The sizes are the ones whose products broke before: output length per parser; declared
 * tools x name length (whole-output starts); attributes (the improvised reader); schema size x
 * calls; messages x parts (history repair, system folding, same-role merging); root members
 * and containers (lossless numbers); rules x references (Lark markers); items x blocks (the
 * Responses and Messages translations); held chunks x their weight.
 *
 * A new rewrite gets its row here (a parser gets its row from the registry). More random draws
 * per row: TOOLPROOF_FUZZ_RUNS=5 npx vitest run tests/hardening/surface-budgets
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HeldText } from '../../policies/corrective-retry/held-text.js';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { repairHistory } from '../../policies/history-repair/repair.js';
import { joinContent, joinContents } from '../../policies/history-repair/message-content.js';
import { translateRequest as fromMessages } from '../../protocol/anthropic/request.js';
import { narrowChatAllowedTools } from '../../protocol/allowed-tools.js';
import { CustomCallChunks } from '../../protocol/chat-custom-tools.js';
import { parseJsonBody } from '../../protocol/json-body.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import type { ChatCompletionChunk, ChatMessage, JsonObject } from '../../protocol/openai.js';
import { larkMarkers, markerPattern } from '../../protocol/responses/lark-markers.js';
import { encodeOwnCompaction } from '../../protocol/responses/compaction.js';
import { translateRequest as fromResponses } from '../../protocol/responses/request.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { textOnlyTurn } from '../../policies/kit/last-turn.js';
import { withGuidableSchemas } from '../../policies/guided-schema/index.js';
import { splitParallelCalls } from '../../policies/single-call-turns/index.js';
import { readImprovisedCalls } from '../../parsers/kit/structured-reader.js';
import { createRecoveryStream } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { budget, pick } from './surface-budget.js';

// ---------------------------------------------------------------- the measure itself

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

describe('the x1 vs x4 measure', () => {
  // The rows below pass only if the measure can fail: a linear surface passes, a quadratic one
  // (x16 at 4x the size) is flagged in time, one that keeps a quadratic amount in memory.
  const linear = (n: number) => {
    let h = 0;
    for (let i = 0; i < n * 64; i++) h = (h * 31 + i) | 0;
    return h;
  };
  const quadratic = (n: number) => {
    let h = 0;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) h = (h * 31 + j) | 0;
    return h;
  };
  it('passes linear work and flags quadratic work (CPU time)', () => {
    const lin = measureScaling((n) => n, linear, { from: 1000, max: 1 << 24, slackMs: 5 });
    expect(withinBudget(lin, 5).time, JSON.stringify(lin)).toBe(true);
    // Capped at 1024 (~5 ms at 1x, ~90 ms at 4x): the next doubling, where the 8 ms target
    // stopped it, took ~22 ms and ~350 ms a run, and a quadratic gets the thorough look (7 pairs).
    const quad = measureScaling((n) => n, quadratic, { from: 64, max: 1024, slackMs: 5 });
    expect(withinBudget(quad, 5).time, JSON.stringify(quad)).toBe(false);
    // A quadratic that copies (each step a new array one longer): the measure leaves the GC's
    // pauses out, never the copying itself.
    const copies = (n: number) => {
      let a: number[] = [];
      for (let i = 0; i < n; i++) a = a.concat(i);
      return a.length;
    };
    // Up to 4096: capped at 1024 its base read ~5 ms, under the 8 ms target, and one official
    // CI run read 4.9 vs 48.4 ms (x9.9 of the x16 it is: a slow base run), within 10x + 5 ms.
    // The base now grows to where it reads the target (2048, ~10-20 ms a run).
    const copy = measureScaling((n) => n, copies, { from: 64, max: 4096 });
    expect(withinBudget(copy, 5).time, JSON.stringify(copy)).toBe(false);
  }, 120_000);
  it('does not bill the 4x runs a GC that collects what the input never made', () => {
    // What a worker's heap holds after the files before (isolate: false): a major GC's cost is in
    // proportion to it, whatever the input. It lands in a 4x run more often than in a 1x one
    // (the 4x run allocates more); here it lands in every 4x run, ~100 ms against ~2 ms at 1x.
    const worker = Array.from({ length: 1 << 20 }, (_, i) => ({ i, s: `${i}` }));
    const size = 32_768;
    const s = measureScaling(
      (n) => n,
      (n) => {
        const h = linear(n);
        if (n > size) gc();
        return h;
      },
      { from: size, max: size },
    );
    expect(worker.length).toBe(1 << 20);
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 120_000);
  it('passes a linear result and flags a quadratic one (retained memory)', () => {
    // n doubles filled by a plain loop (Array.from's callback per element took ~400 ms for the
    // quadratic's 4M at 4x, run 7 times); the same 8 bytes an element kept.
    const keep = (n: number) => {
      const a = new Array<number>(n);
      for (let i = 0; i < n; i++) a[i] = i + 0.5;
      return a;
    };
    const lin = measureScaling((n) => n, keep, { from: 100_000, max: 100_000 });
    expect(withinBudget(lin, 5).memory, JSON.stringify(lin)).toBe(true);
    const quad = measureScaling(
      (n) => n,
      (n) => keep(n * n),
      { from: 512, max: 512 },
    );
    expect(withinBudget(quad, 5).memory, JSON.stringify(quad)).toBe(false);
  }, 120_000);
});

// ---------------------------------------------------------------- parser products

const weather: DeclaredTool = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('products of sizes in the parsers', () => {
  it('whole-output starts: declared tools x1 vs x4 (8 streams, a shared name prefix)', () => {
    budget(
      'name starts, tools',
      (size, rnd) => {
        const prefix = 'a'.repeat(64 + Math.floor(rnd() * 64));
        const tools = new Map<string, DeclaredTool>();
        for (let i = 0; i < size; i++) tools.set(`${prefix}${i}`, { name: `${prefix}${i}` });
        return { tools, text: `${prefix}${size >> 1}(` };
      },
      ({ tools, text }) => {
        const streams = [];
        for (let c = 0; c < 8; c++) {
          const s = createRecoveryStream({ tools, newId: () => 'x' });
          for (let i = 0; i < text.length; i += 4) s.push({ content: text.slice(i, i + 4) });
          streams.push(s);
        }
        return streams;
      },
      { from: 256, max: 4096 },
      2001,
    );
  }, 120_000);

  it('whole-output starts: name length x1 vs x4 (8 streams)', () => {
    budget(
      'name starts, name length',
      (size, rnd) => {
        const tools = new Map<string, DeclaredTool>();
        const stem = 'b'.repeat(size);
        for (let i = 0; i < 64; i++) tools.set(`${stem}${i}`, { name: `${stem}${i}` });
        return { tools, text: `<${stem}${Math.floor(rnd() * 64)}>` };
      },
      ({ tools, text }) => {
        const streams = [];
        for (let c = 0; c < 8; c++) {
          const s = createRecoveryStream({ tools, newId: () => 'x' });
          for (let i = 0; i < text.length; i += 4) s.push({ content: text.slice(i, i + 4) });
          streams.push(s);
        }
        return streams;
      },
      { from: 256, max: 16_384 },
      2002,
    );
  }, 120_000);

  it('the improvised reader: attributes x1 vs x4', () => {
    const tools = new Map([['get_weather', weather]]);
    budget(
      'reader attributes',
      (size, rnd) => {
        let attrs = '';
        for (let i = 0; i < size; i++) attrs += ` a${i}="${rnd() < 0.5 ? 'get_weather' : `v${i}`}"`;
        return `<x${attrs}/>`;
      },
      (text) => readImprovisedCalls(text, tools),
      { from: 256, max: 64_000 },
      2003,
    );
  }, 120_000);

  it('schema size x calls: calls, enum size, and both x1 vs x4 (one request each)', () => {
    const schemaOf = (values: number) => ({
      type: 'object',
      properties: { v: { type: 'string', enum: Array.from({ length: values }, (_, i) => `v${i}`) } },
      required: ['v'],
    });
    const request = ({ schema, calls }: { schema: JsonObject; calls: number }) => {
      // one request: its schema parsed once (a fresh object), every call validated and read
      const own = structuredClone(schema);
      const tools = new Map([['pick', { name: 'pick', parameters: own }]]);
      const out = [];
      for (let i = 0; i < calls; i++) out.push(validateArguments(own, { v: `v${i}` }).valid);
      const text = JSON.stringify(
        Array.from({ length: calls }, (_, i) => ({ name: 'pick', arguments: { v: `v${i}` } })),
      );
      out.push(readImprovisedCalls(text, tools)?.length);
      return out;
    };
    budget(
      'schema x calls: calls',
      (size) => ({ schema: schemaOf(20_000), calls: size }),
      request,
      { from: 16, max: 4096 },
      2004,
    );
    budget(
      'schema x calls: enum',
      (size) => ({ schema: schemaOf(size), calls: 64 }),
      request,
      { from: 1000, max: 400_000 },
      2005,
    );
    // both sizes x4 together: a product of them is x16, their sum x4
    budget(
      'schema x calls: both',
      (size) => ({ schema: schemaOf(size * 250), calls: size }),
      request,
      { from: 8, max: 2048 },
      2006,
    );
  }, 240_000);
});

// ---------------------------------------------------------------- request rewrites

function randomHistory(size: number, rnd: () => number): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'user', content: 'go' }];
  const content = (i: number): ChatMessage['content'] =>
    rnd() < 0.5 ? `text ${i}` : [{ type: 'text', text: `part ${i}` }];
  for (let i = 0; i < size; i++) {
    const r = rnd();
    if (r < 0.25) out.push({ role: 'system', content: content(i) });
    else if (r < 0.5) out.push({ role: 'user', content: content(i) });
    else if (r < 0.65) out.push({ role: 'assistant', content: content(i) });
    else if (r < 0.8)
      out.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'f', arguments: '{}' } }],
      } as ChatMessage);
    else
      out.push({
        role: 'tool',
        tool_call_id: `c${Math.floor(rnd() * size)}`,
        content: `r${i}`,
      } as ChatMessage);
  }
  return out;
}

describe('request rewrites: size x1 vs x4', () => {
  const merging = { ...DEFAULT_MODEL_SETTINGS.historyRepair, mergeSameRole: true, bridgeToolToUser: true };

  it('history repair (random roles, parts, calls and results; merging on)', () => {
    budget(
      'history repair',
      randomHistory,
      (m) => repairHistory(m, merging),
      { from: 500, max: 200_000 },
      3001,
    );
  }, 120_000);

  it('system folding: system messages with parts before the first assistant turn', () => {
    budget(
      'system folding',
      (size, rnd) => {
        const m: ChatMessage[] = [{ role: 'user', content: 'hi' }];
        for (let i = 0; i < size; i++)
          m.push({ role: rnd() < 0.8 ? 'system' : 'user', content: [{ type: 'text', text: `s${i}` }] });
        return m;
      },
      (m) => repairHistory(m, merging),
      { from: 500, max: 200_000 },
      3002,
    );
  }, 120_000);

  it('joinContents is joinContent folded pair by pair (property)', () => {
    const content = fc.oneof(
      fc.constantFrom<ChatMessage['content']>(null, undefined, ''),
      fc.string({ maxLength: 3 }),
      fc.array(fc.record({ type: fc.constant('text' as const), text: fc.string({ maxLength: 3 }) }), {
        maxLength: 3,
      }),
    );
    fc.assert(
      fc.property(fc.array(content, { minLength: 1, maxLength: 8 }), (list) => {
        const folded = list.slice(1).reduce((a, b) => joinContent(a, b), list[0]);
        expect(joinContents(list)).toEqual(folded);
      }),
      { numRuns: 2000, seed: 3003 },
    );
  });

  it('lossless numbers: root members and containers', () => {
    const spellings = ['1.0', '1', '-0', '12345678901234567890', '1e400', '2.50', '"s"'];
    budget(
      'lossless numbers',
      (size, rnd) => {
        const members: string[] = [];
        for (let i = 0; i < size; i++)
          members.push(
            rnd() < 0.5
              ? `"k${i}":${pick(rnd, spellings)}`
              : `"o${i}":{"2":${pick(rnd, spellings)},"1":[1.0]}`,
          );
        return Buffer.from(`{"model":"m",${members.join(',')}}`);
      },
      (bytes) => {
        const value = parseJsonBody(bytes) as Record<string, unknown>;
        keepSourceText(value, bytes);
        return stringifyJson({ ...value, tools: [] }, value);
      },
      { from: 500, max: 200_000 },
      3004,
    );
  }, 120_000);

  it('Lark markers: rules x1 vs x4, and references per rule x1 vs x4', () => {
    const grammar = (rules: number, refs: number, rnd: () => number) => {
      const lines = ['start: r0 "end"'];
      for (let i = 0; i < rules; i++) {
        const parts: string[] = [];
        for (let j = 0; j < refs; j++)
          parts.push(
            i + 1 < rules && rnd() < 0.8
              ? `r${i + 1 + Math.floor(rnd() * Math.min(3, rules - i - 1))}`
              : `"x${j}"`,
          );
        lines.push(`r${i}: ${parts.join(' ')}`);
      }
      return lines.join('\n');
    };
    const read = (g: string) => markerPattern(larkMarkers(g));
    budget('lark rules', (size, rnd) => grammar(size, 3, rnd), read, { from: 64, max: 4000 }, 3005);
    budget('lark references', (size, rnd) => grammar(12, size, rnd), read, { from: 4, max: 4000 }, 3006);
  }, 240_000);

  it('the Responses translation: input items x1 vs x4', () => {
    budget(
      'responses translation',
      (size, rnd) => {
        const input: unknown[] = [];
        for (let i = 0; i < size; i++) {
          const r = rnd();
          if (r < 0.3) input.push({ role: 'user', content: [{ type: 'input_text', text: `u${i}` }] });
          else if (r < 0.45) input.push({ role: 'developer', content: `d${i}` });
          else if (r < 0.65)
            input.push({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' });
          else if (r < 0.85) input.push({ type: 'function_call_output', call_id: `c${i}`, output: 'ok' });
          else input.push({ role: 'assistant', content: [{ type: 'output_text', text: `a${i}` }] });
        }
        return {
          model: 'm',
          input,
          tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
        };
      },
      (body) => fromResponses(body as never),
      { from: 500, max: 200_000 },
      3007,
    );
  }, 120_000);

  // sessions19: items that add tools or settings (request.ts fromItems) and program items
  // (hosted-history.ts): one pass; added tools drawn from 512 names, so repeats are declared once.
  it('the Responses translation: additional_tools, configuration_update, program and own compaction items x1 vs x4', () => {
    budget(
      'responses items that add tools',
      (size, rnd) => {
        const input: unknown[] = [];
        for (let i = 0; i < size; i++) {
          const r = rnd();
          const name = `t${Math.floor(rnd() * 512)}`;
          if (r < 0.3) input.push({ role: 'user', content: `u${i}` });
          else if (r < 0.55)
            input.push({
              type: 'additional_tools',
              role: 'developer',
              tools: [{ type: 'function', name, parameters: { type: 'object' } }],
            });
          else if (r < 0.65) input.push({ type: 'configuration_update', reasoning: { effort: 'low' } });
          // toolproof's own compaction (responses/compaction.ts): its summary decoded
          else if (r < 0.7)
            input.push({
              type: 'compaction',
              encrypted_content: encodeOwnCompaction(`summary ${i} `.repeat(4)),
            });
          else if (r < 0.85)
            input.push({
              type: 'program',
              id: `p${i}`,
              call_id: `c${i}`,
              code: 'return 1;',
              fingerprint: 'x',
            });
          else
            input.push({
              type: 'program_output',
              id: `o${i}`,
              call_id: `c${i}`,
              result: '1',
              status: 'completed',
            });
        }
        return {
          model: 'm',
          input,
          tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
        };
      },
      (body) => fromResponses(body as never),
      { from: 500, max: 200_000 },
      3190,
    );
  }, 120_000);

  it('tool_choice allowed_tools: declared tools and allowed entries x1 vs x4 (chat and Responses)', () => {
    // Chat: the allowed entries scale (64 declared tools; entries in random order, repeated,
    // some naming no declared tool: a body may carry any number). Responses: declared tools and
    // entries together, at most 1,024 declared at 1x (4,096 at 4x: the most a request may declare).
    const draw = (tools: number, entries: number, rnd: () => number) => {
      const names = Array.from({ length: tools }, (_, i) => `t${i}`);
      const allowed = Array.from({ length: entries }, () => {
        const k = Math.floor(rnd() * tools);
        return rnd() < 0.2 ? `t${k}_x` : `t${k}`;
      });
      return { names, allowed };
    };
    budget(
      'allowed_tools (chat)',
      (size, rnd) => {
        const { names, allowed } = draw(64, size, rnd);
        return {
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
          tools: names.map((name) => ({
            type: 'function',
            function: { name, parameters: { type: 'object' } },
          })),
          tool_choice: {
            type: 'allowed_tools',
            allowed_tools: {
              mode: 'auto',
              tools: allowed.map((name) => ({ type: 'function', function: { name } })),
            },
          },
        };
      },
      (body) => narrowChatAllowedTools(body as never),
      { from: 500, max: 200_000 },
      3013,
    );
    budget(
      'allowed_tools (Responses)',
      (size, rnd) => {
        const { names, allowed } = draw(size, size, rnd);
        return {
          model: 'm',
          input: 'hi',
          tools: names.map((name) => ({ type: 'function', name, parameters: { type: 'object' } })),
          tool_choice: {
            type: 'allowed_tools',
            mode: 'auto',
            tools: allowed.map((name) => ({ type: 'function', name })),
          },
        };
      },
      (body) => fromResponses(body as never),
      { from: 256, max: 1024 },
      3014,
    );
  }, 120_000);

  it('single-call-turns: calls in one message x1 vs x4, their results in random order', () => {
    budget(
      'split parallel calls',
      (size, rnd) => {
        const ids = Array.from({ length: size }, (_, i) => `c${i}`);
        const results = ids.map((id) => ({
          role: 'tool',
          tool_call_id: rnd() < 0.1 ? `${id}_x` : id,
          content: id,
        }));
        // Fisher-Yates, one number a result: a sort by a random comparator drew ~19 (~0.2-0.3 s
        // of the row's ~0.7-0.85 s of CPU), for an order less uniform
        for (let i = results.length - 1; i > 0; i--) {
          const j = Math.floor(rnd() * (i + 1));
          [results[i], results[j]] = [results[j]!, results[i]!];
        }
        return [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: null,
            tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } })),
          },
          ...results,
        ] as ChatMessage[];
      },
      (messages) => splitParallelCalls(messages),
      { from: 500, max: 200_000 },
      3015,
    );
  }, 120_000);

  it('the Messages translation: messages x blocks', () => {
    budget(
      'messages translation',
      (size, rnd) => {
        const messages: unknown[] = [];
        for (let i = 0; i < size; i++) {
          const uses = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, j) => ({
            type: 'tool_use',
            id: `t${i}_${j}`,
            name: 'f',
            input: {},
          }));
          messages.push({ role: 'assistant', content: [{ type: 'text', text: `a${i}` }, ...uses] });
          messages.push({
            role: 'user',
            content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'ok' })),
          });
        }
        return {
          model: 'm',
          max_tokens: 10,
          system: 's',
          messages,
          tools: [{ name: 'f', input_schema: { type: 'object' } }],
        };
      },
      (body) => fromMessages(body as never),
      { from: 250, max: 100_000 },
      3008,
    );
  }, 120_000);

  // sessions19: mcp_tool_listing blocks (hosted-history.ts), their tool lists of any length
  it('the Messages translation: mcp_tool_listing blocks x1 vs x4', () => {
    budget(
      'messages mcp_tool_listing',
      (size, rnd) => {
        const content: unknown[] = [];
        for (let i = 0; i < size; i++)
          content.push({
            type: 'mcp_tool_listing',
            mcp_server_name: `s${i}`,
            tools: Array.from({ length: 1 + Math.floor(rnd() * 8) }, (_, j) => ({
              name: `tool_${i}_${j}`,
              input_schema: { type: 'object' },
            })),
          });
        return {
          model: 'm',
          max_tokens: 10,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content },
            { role: 'user', content: 'go on' },
          ],
        };
      },
      (body) => fromMessages(body as never),
      { from: 250, max: 100_000 },
      3191,
    );
  }, 120_000);

  it('chat custom tools streamed: choices x1 vs x4, each holding its calls', () => {
    // Each finishing choice scanned every call held for every choice (choices x calls).
    budget(
      'custom call chunks',
      (size) => {
        const chunk = (choices: unknown[]) =>
          ({
            id: 'c',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'm',
            choices,
          }) as ChatCompletionChunk;
        const out: ChatCompletionChunk[] = [];
        for (let k = 0; k < size; k++)
          out.push(
            chunk([
              {
                index: k,
                delta: {
                  tool_calls: Array.from({ length: 8 }, (_, j) => ({
                    index: j,
                    id: `c${k}_${j}`,
                    type: 'function',
                    function: { name: 'patch', arguments: '{"input":"x"}' },
                  })),
                },
                finish_reason: null,
              },
            ]),
          );
        for (let k = 0; k < size; k++)
          out.push(chunk([{ index: k, delta: {}, finish_reason: 'tool_calls' }]));
        return out;
      },
      (chunks) => {
        const custom = new CustomCallChunks(new Set(['patch']));
        return chunks.map((c) => custom.map(c));
      },
      // from 1,024 choices (the n of one request is at most 128, but choices x calls is the
      // product: 8 calls each keeps the linear part, a JSON.parse per call, from hiding the scan)
      { from: 1024, max: 16_384 },
      3010,
    );
  }, 120_000);

  it('held chunks: chunks x1 vs x4, each with an extra field', () => {
    budget(
      'held chunks',
      (size, rnd) =>
        Array.from(
          { length: size },
          (_, i): ChatCompletionChunk =>
            ({
              id: 'c',
              object: 'chat.completion.chunk',
              created: 1,
              model: 'm',
              choices: [{ index: 0, delta: { content: `t${i}` }, finish_reason: null }],
              ...(rnd() < 0.5 ? { extra: 'x'.repeat(32) } : {}),
            }) as ChatCompletionChunk,
        ),
      (chunks) => {
        const held = new HeldText();
        for (const c of chunks) held.add(c, chunks[0]!);
        return held.overhead;
      },
      { from: 500, max: 200_000 },
      3009,
    );
  }, 120_000);

  it("a text-only turn: the last user turn's parts x their length (force-tool-use reads it every request)", () => {
    budget(
      'text-only turn',
      (size, rnd) => {
        // near misses of the phrases, so the match runs to the end of each part (made once per
        // size, not per part: ~0.5 s of the row's ~0.8 s of CPU)
        const misses = 'do not call anything, respond with text '.repeat(Math.ceil(size / 64));
        return {
          model: 'm',
          messages: [
            {
              role: 'user' as const,
              content: Array.from({ length: size }, (_, i) => ({
                type: 'text' as const,
                text: `${misses}${rnd() < 0.5 ? 'respond with text' : `reply ${i}`}`,
              })),
            },
          ],
        };
      },
      (request) => textOnlyTurn(request),
      { from: 64, max: 64_000 },
      3011,
    );
  }, 120_000);

  it('schema keywords a backend refused: tools x their schemas (guided-schema rewrites every turn once refused)', () => {
    const schema = (size: number, rnd: () => number): JsonObject => {
      const properties: JsonObject = {};
      for (let i = 0; i < size; i++)
        properties[`p${i}`] = pick(rnd, [
          { type: 'array', items: { type: 'string' }, uniqueItems: true },
          { type: 'number', multipleOf: 0.5 },
          { type: 'object', properties: { uniqueItems: { type: 'string' } } },
          { type: 'string' },
        ]);
      return { type: 'object', properties };
    };
    budget(
      'guided-schema',
      (size, rnd) => ({
        model: 'm',
        messages: [{ role: 'user' as const, content: 'x' }],
        tools: Array.from({ length: Math.ceil(Math.sqrt(size)) }, (_, i) => ({
          type: 'function' as const,
          function: { name: `t${i}`, parameters: schema(Math.ceil(Math.sqrt(size)), rnd) },
        })),
        response_format: { type: 'json_schema', json_schema: { name: 'a', schema: schema(size, rnd) } },
      }),
      (request) => withGuidableSchemas(request as never).request,
      { from: 64, max: 64_000 },
      3012,
    );
  }, 120_000);
});
