/**
 * The run's mark (server/capture/runs.ts, docs/inspect.md "Runs that open alike"): the reply a
 * run's first request got, read from the body the client received on any door, streamed or not,
 * marks the run as the first assistant message every later request carries back does.
 */
import { describe, expect, it } from 'vitest';
import { ownRun, runOfHistory, runOfReply } from '../../server/capture/runs.js';

const sse = (events: unknown[]) =>
  `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
const typed = (events: Array<{ type: string }>) =>
  events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

/** The mark of a later request whose first assistant message (chat form) is `assistant`. */
const carried = (assistant: Record<string, unknown>) =>
  runOfHistory([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'List the files.' },
    { role: 'assistant', ...assistant },
    { role: 'tool', tool_call_id: 'x', content: 'a.txt' },
  ]);

const CALL = { id: 'call_Zq81', type: 'function', function: { name: 'ls', arguments: '{}' } };

describe("a run's mark", () => {
  it('a first request carries none; a later one, its first assistant message', () => {
    expect(runOfHistory([{ role: 'user', content: 'hi' }])).toBeUndefined();
    expect(runOfHistory(undefined)).toBeUndefined();
    expect(carried({ content: null, tool_calls: [CALL] })).toMatch(/^[0-9a-f]{8}$/);
    // Only the first assistant message counts: appending turns never changes the mark.
    const longer = runOfHistory([
      { role: 'user', content: 'List the files.' },
      { role: 'assistant', content: null, tool_calls: [CALL] },
      { role: 'tool', tool_call_id: CALL.id, content: 'a.txt' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Now read it.' },
    ]);
    expect(longer).toBe(carried({ content: null, tool_calls: [CALL] }));
    // Another reply (another run): another mark.
    expect(carried({ content: null, tool_calls: [{ ...CALL, id: 'call_P0k2' }] })).not.toBe(longer);
  });

  it('a tool call: its id, whatever the door and whether it streamed', () => {
    const mark = carried({ content: '', tool_calls: [CALL] });
    const bodies = {
      chat: JSON.stringify({
        choices: [{ index: 0, message: { role: 'assistant', content: 'Let me look.', tool_calls: [CALL] } }],
      }),
      'chat, streamed': sse([
        { choices: [{ index: 0, delta: { role: 'assistant', content: 'Let me look.' } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...CALL }] } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] } }] },
      ]),
      responses: JSON.stringify({
        object: 'response',
        output: [
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.' }] },
          { type: 'function_call', id: 'fc_1', call_id: CALL.id, name: 'ls', arguments: '{}' },
        ],
      }),
      'responses, streamed': typed([
        { type: 'response.created', response: { output: [] } } as { type: string },
        {
          type: 'response.output_item.added',
          output_index: 1,
          item: { type: 'function_call', id: 'fc_1', call_id: CALL.id, name: 'ls', arguments: '' },
        } as { type: string },
      ]),
      messages: JSON.stringify({
        type: 'message',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: CALL.id, name: 'ls', input: {} },
        ],
      }),
      'messages, streamed': typed([
        { type: 'message_start', message: { content: [] } } as { type: string },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } as {
          type: string;
        },
        {
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: CALL.id, name: 'ls', input: {} },
        } as { type: string },
      ]),
    };
    for (const [door, body] of Object.entries(bodies)) expect(runOfReply(body), door).toBe(mark);
  });

  it('a text reply: its text, trimmed; an error or an empty body: none', () => {
    const mark = carried({ content: 'Paris is sunny.' });
    expect(
      runOfReply(JSON.stringify({ choices: [{ index: 0, message: { content: 'Paris is sunny.\n' } }] })),
    ).toBe(mark);
    expect(
      runOfReply(
        sse([
          { choices: [{ index: 0, delta: { content: 'Paris is ' } }] },
          { choices: [{ index: 0, delta: { content: 'sunny.' } }] },
        ]),
      ),
    ).toBe(mark);
    expect(runOfReply(JSON.stringify({ error: { message: 'CUDA out of memory' } }))).toBeUndefined();
    expect(runOfReply('')).toBeUndefined();
    // A request's own run (a first request that got no reply) is no reply's.
    expect(ownRun('req-1')).toMatch(/^[0-9a-f]{8}$/);
    expect(ownRun('req-1')).not.toBe(ownRun('req-2'));
  });
});
