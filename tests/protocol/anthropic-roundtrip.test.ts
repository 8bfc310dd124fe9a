/**
 * Property tests for the Messages <-> chat translation: a conversation translated to chat and
 * back keeps every call id, tool result and text; a streamed answer, split anywhere, folds into
 * the same message as the non-streamed translation of the same completion.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TOOL_ERROR_PREFIX, toChatRequest } from '../../protocol/anthropic/request.js';
import { messageId, toMessage } from '../../protocol/anthropic/response.js';
import { MessageStreamTranslator } from '../../protocol/anthropic/stream.js';
import type {
  Message,
  MessageParam,
  RequestBlock,
  ResponseBlock,
  StreamEvent,
  ToolUseBlock,
} from '../../protocol/anthropic/types.js';
import type { ChatCompletion, ChatCompletionChunk, ChatMessage, ContentPart } from '../../protocol/openai.js';

const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
const name = fc.stringMatching(/^[a-z_][a-z0-9_]{0,15}$/);
const jsonInput = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }),
  fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 3 }),
  ),
  { maxKeys: 4 },
);

/** One assistant turn and the user turn answering its calls. */
const exchange = fc.record({
  thinking: fc.option(text, { nil: undefined }),
  text: fc.option(text, { nil: undefined }),
  calls: fc.uniqueArray(
    fc.record({ id: fc.stringMatching(/^(toolu|call)_[A-Za-z0-9]{4,12}$/), name, input: jsonInput }),
    {
      selector: (c) => c.id,
      maxLength: 4,
    },
  ),
  results: fc.array(
    fc.record({
      content: fc.oneof(text, fc.array(text, { minLength: 1, maxLength: 3 })),
      isError: fc.boolean(),
    }),
    { minLength: 4, maxLength: 4 },
  ),
  followUp: fc.option(fc.array(text, { minLength: 1, maxLength: 3 }), { nil: undefined }),
});

type Exchange = typeof exchange extends fc.Arbitrary<infer T> ? T : never;

function build(first: string, exchanges: Exchange[]): MessageParam[] {
  const out: MessageParam[] = [{ role: 'user', content: first }];
  for (const ex of exchanges) {
    const blocks: RequestBlock[] = [];
    if (ex.thinking) blocks.push({ type: 'thinking', thinking: ex.thinking, signature: '' });
    if (ex.text) blocks.push({ type: 'text', text: ex.text });
    for (const c of ex.calls) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input });
    if (blocks.length === 0) blocks.push({ type: 'text', text: 'ok' });
    out.push({ role: 'assistant', content: blocks });
    const user: RequestBlock[] = ex.calls.map((c, i) => {
      const r = ex.results[i]!;
      const content =
        typeof r.content === 'string'
          ? r.content
          : r.content.map((t) => ({ type: 'text' as const, text: t }));
      return { type: 'tool_result', tool_use_id: c.id, content, is_error: r.isError };
    });
    for (const t of ex.followUp ?? []) user.push({ type: 'text', text: t });
    if (user.length === 0) user.push({ type: 'text', text: 'go on' });
    out.push({ role: 'user', content: user });
  }
  return out;
}

const asText = (c: ChatMessage['content']): string =>
  typeof c === 'string' ? c : (c ?? []).map((p: ContentPart) => p.text ?? '').join('\n\n');

/** A chat assistant message answered back as a completion, through the response translation. */
function back(m: ChatMessage): ResponseBlock[] {
  const completion: ChatCompletion = {
    id: 'chatcmpl-x',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [
      {
        index: 0,
        finish_reason: 'stop',
        message: {
          role: 'assistant',
          content: (m.content as string | null) ?? null,
          ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
          ...(m.reasoning_content ? { reasoning_content: m.reasoning_content } : {}),
        },
      },
    ],
  };
  return toMessage(completion, { id: 'msg_r', model: 'm' }).content;
}

describe('Messages -> chat -> Messages keeps ids, results and text', () => {
  it('every assistant turn, tool result and user text survives', () => {
    fc.assert(
      fc.property(
        text,
        fc.array(exchange, { maxLength: 4 }),
        fc.option(text, { nil: undefined }),
        (first, exchanges, system) => {
          const messages = build(first, exchanges);
          const chat = toChatRequest({
            model: 'm',
            max_tokens: 64,
            messages,
            ...(system ? { system } : {}),
          }).messages;
          let i = 0;
          if (system) expect(chat[i++]).toEqual({ role: 'system', content: system });
          expect(chat[i++]).toEqual({ role: 'user', content: first });
          for (const ex of exchanges) {
            // The assistant turn, back through the response translation: same blocks.
            const assistant = chat[i++]!;
            expect(assistant.role).toBe('assistant');
            const blocks = back(assistant);
            const expected: ResponseBlock[] = [];
            if (ex.thinking) expected.push({ type: 'thinking', thinking: ex.thinking, signature: '' });
            if (ex.text || (!ex.thinking && ex.calls.length === 0))
              expected.push({ type: 'text', text: ex.text ?? 'ok' });
            for (const c of ex.calls)
              expected.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input });
            expect(blocks).toEqual(expected);
            // Every result, in order, under its call's id; errors marked.
            ex.calls.forEach((c, k) => {
              const tool = chat[i++]!;
              const r = ex.results[k]!;
              const body = typeof r.content === 'string' ? r.content : r.content.join('\n\n');
              expect(tool).toEqual({
                role: 'tool',
                tool_call_id: c.id,
                content: (r.isError ? TOOL_ERROR_PREFIX : '') + body,
              });
            });
            const follow = ex.followUp ?? (ex.calls.length === 0 ? ['go on'] : []);
            if (follow.length > 0) {
              const user = chat[i++]!;
              expect(user.role).toBe('user');
              expect(asText(user.content)).toBe(follow.join('\n\n'));
            }
          }
          expect(i).toBe(chat.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** Folds stream events into a message, as a client does. */
function fold(events: StreamEvent[]): Message {
  let msg: Message | undefined;
  const json = new Map<number, string>();
  const open = new Set<number>();
  for (const e of events) {
    switch (e.type) {
      case 'message_start':
        expect(msg).toBeUndefined();
        msg = structuredClone(e.message);
        break;
      case 'content_block_start':
        expect(e.index).toBe(msg!.content.length);
        msg!.content.push(structuredClone(e.content_block));
        open.add(e.index);
        break;
      case 'content_block_delta': {
        expect(open.has(e.index)).toBe(true);
        const b = msg!.content[e.index]!;
        if (e.delta.type === 'text_delta' && b.type === 'text') b.text += e.delta.text;
        else if (e.delta.type === 'thinking_delta' && b.type === 'thinking') b.thinking += e.delta.thinking;
        else if (e.delta.type === 'input_json_delta' && b.type === 'tool_use')
          json.set(e.index, (json.get(e.index) ?? '') + e.delta.partial_json);
        else throw new Error(`delta ${e.delta.type} into a ${b.type} block`);
        break;
      }
      case 'content_block_stop': {
        expect(open.delete(e.index)).toBe(true);
        const b = msg!.content[e.index]!;
        if (b.type === 'tool_use') b.input = JSON.parse(json.get(e.index) || '{}');
        break;
      }
      case 'message_delta':
        expect(open.size).toBe(0);
        msg!.stop_reason = e.delta.stop_reason;
        msg!.stop_sequence = e.delta.stop_sequence;
        msg!.usage = e.usage;
        break;
      default:
        break;
    }
  }
  expect(events.at(-1)?.type).toBe('message_stop');
  return msg!;
}

/** Splits a string into pieces at random points (code points kept whole). */
const pieces = (s: string, cuts: number[]): string[] => {
  const chars = [...s];
  const at = [...new Set(cuts.map((c) => c % (chars.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const c of [...at, chars.length]) {
    if (c > prev) out.push(chars.slice(prev, c).join(''));
    prev = c;
  }
  return out;
};

describe('streamed equals non-streamed, whatever the split', () => {
  const answer = fc.record({
    reasoning: fc.option(text, { nil: undefined }),
    content: fc.option(text, { nil: undefined }),
    calls: fc.array(
      fc.record({
        id: fc.option(fc.stringMatching(/^call_[a-z0-9]{4,8}$/), { nil: undefined }),
        name,
        input: jsonInput,
      }),
      {
        maxLength: 3,
      },
    ),
    finish: fc.constantFrom('stop', 'length', 'tool_calls'),
    cuts: fc.array(fc.nat(200), { maxLength: 12 }),
    batches: fc.array(fc.nat(5), { maxLength: 30 }),
  });

  it('the folded events equal toMessage of the whole completion', () => {
    fc.assert(
      fc.property(answer, (a) => {
        const completion: ChatCompletion = {
          id: 'chatcmpl-abc',
          object: 'chat.completion',
          created: 1,
          model: 'up',
          choices: [
            {
              index: 0,
              finish_reason: a.finish,
              message: {
                role: 'assistant',
                content: a.content ?? null,
                ...(a.reasoning ? { reasoning_content: a.reasoning } : {}),
                ...(a.calls.length > 0
                  ? {
                      tool_calls: a.calls.map((c) => ({
                        id: c.id ?? '',
                        type: 'function' as const,
                        function: { name: c.name, arguments: JSON.stringify(c.input) },
                      })),
                    }
                  : {}),
              },
            },
          ],
          usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 },
        };
        const base = {
          id: 'chatcmpl-abc',
          object: 'chat.completion.chunk' as const,
          created: 1,
          model: 'up',
        };
        const chunk = (
          delta: ChatCompletionChunk['choices'][0]['delta'],
          finish: string | null = null,
        ): ChatCompletionChunk => ({
          ...base,
          choices: [{ index: 0, delta, finish_reason: finish }],
        });
        const chunks: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '' })];
        for (const p of pieces(a.reasoning ?? '', a.cuts)) chunks.push(chunk({ reasoning_content: p }));
        for (const p of pieces(a.content ?? '', a.cuts)) chunks.push(chunk({ content: p }));
        a.calls.forEach((c, index) => {
          // The name may arrive in pieces before any argument.
          const [head, ...rest] = pieces(c.name, a.cuts.slice(0, 2));
          chunks.push(
            chunk({
              tool_calls: [
                { index, ...(c.id ? { id: c.id } : {}), type: 'function', function: { name: head ?? '' } },
              ],
            }),
          );
          for (const r of rest) chunks.push(chunk({ tool_calls: [{ index, function: { name: r } }] }));
          for (const p of pieces(JSON.stringify(c.input), a.cuts))
            chunks.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
        });
        chunks.push(chunk({}, a.finish));

        const t = new MessageStreamTranslator({ id: 'msg_s', model: 'client-model' });
        const events: StreamEvent[] = [];
        let at = 0;
        for (const size of [...a.batches, Number.POSITIVE_INFINITY]) {
          events.push(...t.push(chunks.slice(at, at + size)));
          at += size;
          if (at >= chunks.length) break;
        }
        events.push(...t.end(completion.usage));
        expect(events[1]).toEqual({ type: 'ping' });
        expect(fold(events)).toEqual(toMessage(completion, { id: 'msg_s', model: 'client-model' }));
      }),
      { numRuns: 300 },
    );
  });
});

describe('ids', () => {
  it('tool_use ids without an upstream id are stable and distinct, same streamed and not', () => {
    const completion: ChatCompletion = {
      id: 'chatcmpl-q1',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: '', type: 'function', function: { name: 'a', arguments: '{}' } },
              { id: '', type: 'function', function: { name: 'b', arguments: '{}' } },
            ],
          },
        },
      ],
    };
    const msg = toMessage(completion, { id: messageId('req:1'), model: 'm' });
    expect(msg.id).toBe('msg_req_1');
    expect((msg.content as ToolUseBlock[]).map((b) => b.id)).toEqual(['toolu_req_1_0', 'toolu_req_1_1']);
    expect(msg.stop_reason).toBe('tool_use');
  });
});
