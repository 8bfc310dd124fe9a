/**
 * protocol/chat-backend-shapes: an assistant turn's `refusal` parts become text parts with the
 * same words (llama-server's parser answers any part but text, image_url and input_audio with
 * its 400 "unsupported content[].type"), a `developer` message a system one; anything else is
 * the same object, and a request with neither is not copied.
 */
import { describe, expect, it } from 'vitest';
import { chatForBackends } from '../../protocol/chat-backend-shapes.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

describe('chatForBackends', () => {
  it('turns refusal parts into text parts and developer messages into system ones', () => {
    const user = { role: 'user', content: 'Hi.' };
    const body = {
      model: 'm',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        user,
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Well.' },
            { type: 'refusal', refusal: 'I cannot help with that.' },
          ],
          refusal: null,
        },
      ],
    } as unknown as ChatCompletionRequest;
    const out = chatForBackends(body)!;
    expect(out.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      user,
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Well.' },
          { type: 'text', text: 'I cannot help with that.' },
        ],
        refusal: null,
      },
    ]);
    expect(out.messages[1]).toBe(user);
    // the client's request is not changed, and the same request gives the same bytes
    expect((body.messages[0] as { role: string }).role).toBe('developer');
    expect(JSON.stringify(chatForBackends(body))).toBe(JSON.stringify(out));
  });

  it('an image_url given as the URL string itself as {url}, in user and tool messages', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: 'https://x.example/a.png' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'c',
          content: [{ type: 'image_url', image_url: 'data:image/png;base64,AAAA', detail: 'low' }],
        },
      ],
    } as unknown as ChatCompletionRequest;
    const out = chatForBackends(body)!;
    expect(out.messages[0]!.content).toEqual([
      { type: 'image_url', image_url: { url: 'https://x.example/a.png' } },
    ]);
    expect(out.messages[2]!.content).toEqual([
      { type: 'image_url', detail: 'low', image_url: { url: 'data:image/png;base64,AAAA' } },
    ]);
    expect(out.messages[1]).toBe(body.messages[1]);
  });

  it('Responses text parts as text parts, Anthropic image blocks as image_url parts; other parts as they are', () => {
    // input_text / output_text: clients building chat bodies from Responses items (llama-server's
    // 400 "unsupported content[].type"); an Anthropic image block: proxies passing Messages content
    // to chat (both backends' 400 for a type they do not know).
    const odd = { type: 'image', source: { type: 'file', file_id: 'f' } };
    const body = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look:' },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'QUJD' } },
            { type: 'image', source: { type: 'url', url: 'https://x.example/b.png' } },
            odd,
          ],
        },
        { role: 'assistant', content: [{ type: 'output_text', text: 'A cat.', annotations: [] }] },
      ],
    } as unknown as ChatCompletionRequest;
    const out = chatForBackends(body)!;
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,QUJD' } },
          { type: 'image_url', image_url: { url: 'https://x.example/b.png' } },
          odd,
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'A cat.' }] },
    ]);
    expect(JSON.stringify(chatForBackends(body))).toBe(JSON.stringify(out));
  });

  it('costs about linear time and memory in the parts (x4 input, at most ~x4)', () => {
    // n parts in one message: bare image URLs among text parts, and an assistant's refusals
    const make = (n: number) =>
      ({
        model: 'm',
        messages: [
          {
            role: 'user',
            content: Array.from({ length: n }, (_, i) =>
              i % 4 === 0
                ? { type: 'image_url', image_url: `https://x.example/${i}.png` }
                : i % 4 === 1
                  ? { type: 'input_text', text: 'x' }
                  : i % 4 === 2
                    ? { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'QUJD' } }
                    : { type: 'text', text: 'x' },
            ),
          },
          {
            role: 'assistant',
            content: Array.from({ length: n }, () => ({ type: 'refusal', refusal: 'no' })),
          },
        ],
      }) as unknown as ChatCompletionRequest;
    const s = measureScaling(make, chatForBackends, { from: 1024, max: 1 << 18 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('leaves a request without either alone', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: [{ type: 'text', text: 'x' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'y' }] },
      ],
    } as unknown as ChatCompletionRequest;
    expect(chatForBackends(body)).toBeUndefined();
  });

  it('the deprecated function role as tool calls and results, ids from their place', () => {
    const history = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, function_call: { name: 'weather', arguments: '{"c":"Oslo"}' } },
      { role: 'function', name: 'weather', content: 'rain' },
      { role: 'user', content: 'And?' },
      { role: 'function', name: 'lookup', content: 'nothing asked for this' },
    ];
    const body = { model: 'm', messages: history } as unknown as ChatCompletionRequest;
    const out = chatForBackends(body)!;
    expect(out.messages).toEqual([
      history[0],
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_fn1', type: 'function', function: { name: 'weather', arguments: '{"c":"Oslo"}' } },
        ],
      },
      { role: 'tool', name: 'weather', tool_call_id: 'call_fn1', content: 'rain' },
      history[3],
      // answers no call: history repair makes it the note it makes of any orphan result
      { role: 'tool', name: 'lookup', tool_call_id: 'call_fn4_result', content: 'nothing asked for this' },
    ]);
    // a later turn (the history grown) sends the same messages first
    const later = chatForBackends({
      model: 'm',
      messages: [...history, { role: 'assistant', content: 'Rain.' }],
    } as unknown as ChatCompletionRequest)!;
    expect(JSON.stringify(later.messages.slice(0, 5))).toBe(JSON.stringify(out.messages));
  });
});
