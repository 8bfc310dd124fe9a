/**
 * Items of openai 7.59's ResponseInputItem union that toolproof refused with a 400 naming the
 * item, on every later turn of the session that held one: `program` and `program_output`
 * (programmatic tool calling on OpenAI's API; the Agents SDK keeps their ids), `additional_tools`
 * (tools made callable mid-conversation) and `configuration_update` (settings for the responses
 * after it). Through the real server and the openai SDK, against the strict llama-server
 * simulator, three turns each re-sending the whole history: each answered, what goes upstream
 * the model can read. The same shapes run in session-shapes.test.ts's sweep.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

type Msg = { role: string; content?: unknown };
type Chat = { messages: Msg[]; tools?: Array<{ function: { name: string } }>; reasoning_effort?: string };
const read = { type: 'function', name: 'Read', parameters: { type: 'object' }, strict: false } as const;

describe('program, program_output, additional_tools and configuration_update in history', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'llama-server', strictHistory: true } as never,
      file: { defaults: { vision: false, audio: false } } as never,
    });
  });
  afterAll(() => stack.close());

  it('three turns, each answered; the items read as lines, the added tool declared, the effort applied', async () => {
    const history = [
      { role: 'user', content: 'Add them up.' },
      { type: 'configuration_update', id: 'cfg_1', reasoning: { effort: 'low' } },
      { type: 'program', id: 'prog_1', call_id: 'call_p', code: 'return 2 + 40;', fingerprint: 'fp' },
      { type: 'program_output', id: 'po_1', call_id: 'call_p', result: '42', status: 'completed' },
      {
        type: 'additional_tools',
        role: 'developer',
        tools: [{ type: 'function', name: 'Glob', parameters: { type: 'object' } }, read],
      },
      { role: 'user', content: 'Now use Glob.' },
    ] as unknown as OpenAI.Responses.ResponseInputItem[];
    for (let turn = 1; turn <= 3; turn++) {
      const r = await stack.client.responses.create(
        { model: 'sim', input: history, tools: [read] },
        { headers: { 'x-sim-scenario': 'echo' } },
      );
      expect(r.status).toBe('completed');
      history.push(...(r.output as unknown as OpenAI.Responses.ResponseInputItem[]));
      history.push({ role: 'user', content: `go on ${turn}` });
    }
    const sent = stack.sim.requests.filter((q) => q.path.endsWith('/chat/completions'));
    expect(sent).toHaveLength(3);
    const first = sent[0]!.body as Chat;
    // Read declared once (the request's own), Glob added.
    expect(first.tools?.map((t) => t.function.name).filter((n) => n !== 'final_answer')).toEqual([
      'Read',
      'Glob',
    ]);
    expect(first.reasoning_effort).toBe('low');
    const text = JSON.stringify(first.messages);
    expect(text).toContain('return 2 + 40;');
    expect(text).toContain('it gave: 42');
    expect(text).toContain('[tools Glob, Read can be called from here on]');
    expect(text).not.toContain('fp');
  });
});
