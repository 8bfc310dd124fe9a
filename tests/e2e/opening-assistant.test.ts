/**
 * A conversation whose first turn is the assistant's: a session resumed from a compaction opens
 * with the summary as an assistant message. Templates that demand alternation count from a user
 * turn: Mistral's raises "After the optional system message, conversation roles must alternate
 * user/assistant/user/assistant/..." (llama-server's 500, as the simulator's mistral template
 * gives it), and the agent sends that opening again on every later turn. With
 * historyRepair.mergeSameRole (the setting for such templates) a fixed user message goes first,
 * the same bytes every turn; without it, the template's refusal turns the repair on (history-repair's
 * refusal, remembered for the model): the first request refused once, every turn answered. Three
 * turns through the real server and the openai SDK, chat and Responses, streamed and not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENING_USER_CONTENT } from '../../policies/history-repair/repair.js';
import { collectStream, startStack, type Stack } from '../server/stack.js';

const SUMMARY = 'Summary of the conversation so far: we were renaming the config loader.';

function chatRequests(stack: Stack) {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
}

/** The history after the system message: the summary, then alternating user / assistant turns. */
function history(turns: string[]): { role: 'user' | 'assistant'; content: string }[] {
  return [
    { role: 'assistant', content: SUMMARY },
    ...turns.map((text, i) => ({
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: text,
    })),
  ];
}

type Turn = (stack: Stack, turns: string[], stream: boolean) => Promise<string>;

const doors: Record<string, Turn> = {
  chat: async (stack, turns, stream) => {
    const messages = [{ role: 'system' as const, content: 'You are terse.' }, ...history(turns)];
    if (!stream) {
      const c = await stack.client.chat.completions.create({ model: 'sim', messages });
      return c.choices[0]?.message.content ?? '';
    }
    return (
      await collectStream(
        await stack.client.chat.completions.create({ model: 'sim', messages, stream: true }),
      )
    ).content;
  },
  responses: async (stack, turns, stream) => {
    const params = { model: 'sim', instructions: 'You are terse.', input: history(turns) };
    const res = stream
      ? await stack.client.responses.stream(params).finalResponse()
      : await stack.client.responses.create(params);
    expect(res.status).toBe('completed');
    return res.output_text;
  },
};

for (const mergeSameRole of [true, false])
  describe(`a conversation opening with the assistant, Mistral template, mergeSameRole: ${mergeSameRole}`, () => {
    let stack: Stack;
    let refusedOnce = false;
    beforeAll(async () => {
      stack = await startStack({
        sim: { personality: 'llama-server', scenario: 'demo', template: 'mistral' },
        file: { defaults: { historyRepair: { mergeSameRole } } },
      });
    });
    afterAll(() => stack.close());

    for (const [door, turn] of Object.entries(doors))
      for (const stream of [false, true])
        it(`${door}${stream ? ' (streamed)' : ''}: ${mergeSameRole ? 'three turns answered, the same opening every turn' : "three turns answered: the template's refusal turns the repair on, once for the model"}`, async () => {
          const turns: string[] = [];
          const openings: string[] = [];
          for (let t = 0; t < 3; t++) {
            stack.sim.reset();
            turns.push(`turn ${t + 1}: go on`);
            const answer = await turn(stack, turns, stream);
            turns.push(answer || '(no text)');
            const sent = chatRequests(stack);
            // Not configured: the first request of the model is refused ("conversation roles must
            // alternate"), sent again repaired, and the refusal remembered (history-repair).
            expect(sent).toHaveLength(!mergeSameRole && !refusedOnce ? 2 : 1);
            if (!mergeSameRole && !refusedOnce) {
              expect(sent[0]!.rawBody).not.toContain(JSON.stringify(OPENING_USER_CONTENT));
              refusedOnce = true;
            }
            const messages = (
              JSON.parse(sent.at(-1)!.rawBody) as { messages: { role: string; content: unknown }[] }
            ).messages;
            expect(messages.slice(0, 3).map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
            expect(messages[1]!.content).toBe(OPENING_USER_CONTENT);
            expect(messages[2]!.content).toBe(SUMMARY);
            openings.push(JSON.stringify(messages.slice(0, 3)));
          }
          expect(new Set(openings).size).toBe(1);
        });
  });
