/**
 * Pure Responses <-> chat translation: conversations survive the round trip (every call id,
 * tool result and text), any split of a streamed answer gives the non-streamed response, the
 * event sequence keeps its invariants, and request fields map to their chat names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletion, ChatCompletionChunk } from '../../protocol/openai.js';
import { inputToMessages } from '../../protocol/responses/items.js';
import { translateRequest } from '../../protocol/responses/request.js';
import {
  completionToResponse,
  ResponsesTranslator,
  type TranslatorContext,
} from '../../protocol/responses/stream.js';
import type { InputItem, ResponsesEvent, ResponsesRequest } from '../../protocol/responses/types.js';
import { messagesToInput } from './responses-inverse.js';

const text = fc.string({ minLength: 1, maxLength: 40 });
const callId = fc.stringMatching(/^call_[A-Za-z0-9]{1,12}$/);
const name = fc.stringMatching(/^[a-z_]{1,12}$/);
const args = fc.dictionary(name, fc.oneof(fc.integer(), text)).map((o) => JSON.stringify(o));

/** One assistant round: optional reasoning and text, its calls, then one output per call. */
const round = fc
  .record({
    reasoning: fc.option(text, { nil: undefined }),
    say: fc.option(text, { nil: undefined }),
    calls: fc.uniqueArray(fc.record({ call_id: callId, name, arguments: args }), {
      minLength: 1,
      maxLength: 3,
      selector: (c) => c.call_id,
    }),
    outputs: fc.array(text, { minLength: 3, maxLength: 3 }),
  })
  .map(({ reasoning, say, calls, outputs }): InputItem[] => [
    ...(reasoning
      ? [{ type: 'reasoning', id: '', summary: [], content: [{ type: 'reasoning_text', text: reasoning }] }]
      : []),
    ...(say ? [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: say }] }] : []),
    ...calls.map((c) => ({ type: 'function_call', ...c })),
    ...calls.map((c, i) => ({ type: 'function_call_output', call_id: c.call_id, output: outputs[i]! })),
  ]);

/** A conversation: user turns, each answered by tool rounds and maybe a closing text. */
const conversation = fc
  .array(
    fc.record({
      role: fc.constantFrom('user', 'system'),
      ask: text,
      rounds: fc.array(round, { maxLength: 3 }),
      answer: fc.option(text, { nil: undefined }),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((turns) =>
    turns.flatMap(({ role, ask, rounds, answer }): InputItem[] => [
      { type: 'message', role: role as 'user' | 'system', content: ask },
      ...rounds.flat(),
      ...(answer
        ? [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer }] }]
        : []),
    ]),
  );

describe('conversation round trip (items -> chat -> items)', () => {
  it('keeps every item: call ids, names, arguments, tool results, texts, reasoning', () => {
    fc.assert(
      fc.property(conversation, (items) => {
        expect(messagesToInput(inputToMessages(items))).toEqual(items);
      }),
      { numRuns: 200 },
    );
  });

  it('each tool message answers the call id of a preceding assistant tool call', () => {
    fc.assert(
      fc.property(conversation, (items) => {
        const messages = inputToMessages(items);
        const called: string[] = [];
        for (const m of messages) {
          for (const tc of m.tool_calls ?? []) called.push(tc.id);
          if (m.role === 'tool') expect(called).toContain(m.tool_call_id);
        }
        const ids = items.flatMap((i) => (i.type === 'function_call' ? [i.call_id as string] : []));
        expect(called).toEqual(ids);
      }),
      { numRuns: 200 },
    );
  });

  it('groups an assistant turn: text and its calls on one message, reasoning on it too', () => {
    const messages = inputToMessages(
      [
        { role: 'user', content: 'Paris?' },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'need weather' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'c2', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'sunny' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '12:00' }] },
      ],
      'Be brief.',
    );
    expect(messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Paris?' },
      {
        role: 'assistant',
        content: 'Checking.',
        reasoning_content: 'need weather',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'c2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: '12:00' }] },
    ]);
  });
});

describe('request translation', () => {
  const toChatRequest = (body: ResponsesRequest) => translateRequest(body).chat;
  const base: ResponsesRequest = { model: 'm', input: 'hi' };

  it('maps tools, tool_choice, text.format, limits and sampling onto chat fields', () => {
    const chat = toChatRequest({
      ...base,
      input: [
        { role: 'developer', content: 'rules' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
      ],
      tools: [
        { type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true },
      ],
      tool_choice: { type: 'function', name: 'f' },
      parallel_tool_calls: false,
      text: { format: { type: 'json_object' } },
      max_output_tokens: 64,
      temperature: 0,
      top_p: 0.5,
      reasoning: { effort: 'high' },
      metadata: { a: 'b' },
      store: true,
      include: ['reasoning.encrypted_content'],
      stream: true,
    });
    expect(chat).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'rules' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
          ],
        },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      max_tokens: 64,
      temperature: 0,
      top_p: 0.5,
      reasoning_effort: 'high',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('rejects what a stateless chat backend cannot do, naming the field', () => {
    const bad: Array<[Partial<ResponsesRequest>, string]> = [
      [{ tools: [{ type: 'teleport' }] }, 'tools[0].type'],
      [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ conversation: 'conv_1' }, 'conversation'],
      [{ tool_choice: { type: 'web_search' } }, 'tool_choice'],
      [{ tool_choice: { type: 'allowed_tools', mode: 'sometimes', tools: [] } }, 'tool_choice.mode'],
      [{ tool_choice: { type: 'allowed_tools', mode: 'required', tools: [] } }, 'tool_choice.tools'],
      [{ text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema'],
      [{ input: [] }, 'input'],
      [{ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] as InputItem[] }, 'input[0].call_id'],
    ];
    // Hosted tools are left out, with the 400 the hosted-tools policy answers under hostedTools: reject.
    const hosted = translateRequest({ ...base, tools: [{ type: 'code_interpreter' }] });
    expect(hosted.dropped).toEqual(['code_interpreter']);
    expect(hosted.refusal).toEqual(expect.objectContaining({ param: 'tools[0].type', status: 400 }));
    for (const [patch, param] of bad) {
      expect(() => toChatRequest({ ...base, ...patch }), param).toThrow(
        expect.objectContaining({ param, status: 400 }),
      );
    }
  });
});

/** Deterministic ids: the streamed and whole translations allocate them in the same order. */
function ctx(): TranslatorContext {
  let n = 0;
  return { request: { model: 'm' }, newId: (p) => `${p}_${n++}`, createdAt: 1 };
}

const completion = (
  content: string | null,
  reasoning: string,
  calls: Array<{ id: string; name: string; args: string }>,
  finish: string,
): ChatCompletion => ({
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [
    {
      index: 0,
      finish_reason: finish,
      message: {
        role: 'assistant',
        content,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.args },
              })),
            }
          : {}),
      },
    },
  ],
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
});

/** Cuts a string at the given fractions. */
function cut(s: string, at: number[]): string[] {
  const points = [...new Set(at.map((f) => Math.floor(f * s.length)))].sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const p of [...points, s.length]) {
    if (p > prev) out.push(s.slice(prev, p));
    prev = Math.max(prev, p);
  }
  return out;
}

function chunk(
  delta: ChatCompletionChunk['choices'][number]['delta'],
  finish: string | null = null,
): ChatCompletionChunk {
  return {
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

describe('streamed translation equals the whole one, whatever the split', () => {
  const answer = fc.record({
    reasoning: fc.string({ maxLength: 30 }),
    content: fc.string({ maxLength: 60 }),
    calls: fc.array(fc.record({ id: callId, name, args }), { maxLength: 3 }),
    finish: fc.constantFrom('stop', 'tool_calls', 'length'),
    cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
  });

  it('same response object and well-formed events', () => {
    fc.assert(
      fc.property(answer, ({ reasoning, content, calls, finish, cuts }) => {
        const whole = completionToResponse(completion(content, reasoning, calls, finish), ctx());
        const t = new ResponsesTranslator(ctx());
        const events: ResponsesEvent[] = [...t.start()];
        events.push(...t.push(chunk({ role: 'assistant', content: '' })));
        for (const p of cut(reasoning, cuts)) events.push(...t.push(chunk({ reasoning_content: p })));
        for (const p of cut(content, cuts)) events.push(...t.push(chunk({ content: p })));
        calls.forEach((c, index) => {
          events.push(
            ...t.push(
              chunk({
                tool_calls: [
                  { index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } },
                ],
              }),
            ),
          );
          for (const p of cut(c.args, cuts))
            events.push(...t.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] })));
        });
        events.push(...t.push(chunk({}, finish)));
        events.push(...t.end({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }));

        const last = events.at(-1) as ResponsesEvent & { response: typeof whole };
        expect(last.response).toEqual(whole);
        expect(last.type).toBe(finish === 'length' ? 'response.incomplete' : 'response.completed');
        expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));

        // Per item: added, then its deltas, then done; the done text is the deltas joined.
        const byItem = new Map<number, ResponsesEvent[]>();
        for (const e of events)
          if (typeof e.output_index === 'number')
            byItem.set(e.output_index, [...(byItem.get(e.output_index) ?? []), e]);
        expect(byItem.size).toBe(whole.output.length);
        for (const [index, evs] of byItem) {
          expect(evs[0]!.type).toBe('response.output_item.added');
          expect(evs.at(-1)!.type).toBe('response.output_item.done');
          const deltas = evs
            .filter((e) => e.type.endsWith('.delta'))
            .map((e) => e.delta as string)
            .join('');
          const item = whole.output[index]!;
          const full =
            item.type === 'function_call'
              ? item.arguments
              : (item as { content: Array<{ text: string }> }).content[0]!.text;
          expect(deltas).toBe(full);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a failure after open ends with an error event then response.failed', () => {
    const t = new ResponsesTranslator(ctx());
    t.start();
    t.push(chunk({ content: 'partial' }));
    const events = t.fail({ code: 'TP_ERR_UPSTREAM_ERROR', message: 'boom', param: null });
    expect(events.map((e) => e.type)).toEqual(['error', 'response.failed']);
    expect(events[0]).toMatchObject({ code: 'TP_ERR_UPSTREAM_ERROR', message: 'boom', sequence_number: 5 });
    expect(events[1]).toMatchObject({
      response: { status: 'failed', error: { code: 'TP_ERR_UPSTREAM_ERROR' } },
    });
  });

  it('usage maps to input/output/total tokens with their details', () => {
    const r = completionToResponse(completion('hi', '', [], 'stop'), ctx(), {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    });
    expect(r.usage).toEqual({
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 4 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 15,
    });
  });
});

describe('computer use in history', () => {
  // A computer_call is run by the client: a call and its result, never a hosted note left as
  // the conversation's last (assistant) message, which the next answer then joined.
  it('is a call of computer and a tool message holding the screenshot', () => {
    const shot = 'data:image/png;base64,iVBORw0KGgo=';
    const input = [
      { role: 'user', content: 'Click.' },
      {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'call_cu',
        status: 'completed',
        action: { type: 'click', button: 'left', x: 10, y: 20 },
        pending_safety_checks: [],
      },
      {
        type: 'computer_call_output',
        call_id: 'call_cu',
        output: { type: 'computer_screenshot', image_url: shot },
        acknowledged_safety_checks: [],
      },
      {
        type: 'computer_call',
        call_id: 'call_cu2',
        action: { type: 'screenshot' },
      },
      {
        type: 'computer_call_output',
        call_id: 'call_cu2',
        output: { type: 'computer_screenshot', file_id: 'file-1' },
      },
    ] as unknown as InputItem[];
    expect(inputToMessages(input)).toEqual([
      { role: 'user', content: 'Click.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_cu',
            type: 'function',
            function: { name: 'computer', arguments: '{"type":"click","button":"left","x":10,"y":20}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_cu', content: [{ type: 'image_url', image_url: { url: shot } }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_cu2',
            type: 'function',
            function: { name: 'computer', arguments: '{"type":"screenshot"}' },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_cu2',
        content: [{ type: 'file', file: { filename: 'screenshot', file_id: 'file-1' } }],
      },
    ]);
  });
});
