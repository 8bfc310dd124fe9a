/**
 * Function calls as the Responses item store keeps them (server/front-doors/responses/item-store.ts),
 * for the store's eviction and many-keys tests: call `i` has ids of one length, so each is
 * counted the same; an assistant answer for the listing tests.
 */
import type OpenAI from 'openai';
import type { InputItem, OutputItem } from '../../protocol/responses/types.js';

/** Output item `i`: a function call whose ids carry `i` in eight digits. */
export const call = (i: number): OutputItem =>
  ({
    type: 'function_call',
    id: `fc_${String(i).padStart(8, '0')}`,
    call_id: `c${String(i).padStart(8, '0')}`,
    name: 'f',
    arguments: '{}',
    status: 'completed',
  }) as OutputItem;

/** The bytes the store counts for one: its JSON, its id and the entry's fixed overhead (128). */
export const PER_ITEM = Buffer.byteLength(JSON.stringify(call(0))) + 'fc_00000000'.length + 128;

/** Output item `i`: an assistant message saying `answer i`. */
export const answer = (i: number): OutputItem =>
  ({
    type: 'message',
    id: `msg_out_${i}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: `answer ${i}`, annotations: [] }],
  }) as OutputItem;

/** Input item `i`: a function call's output, `result i` (and `pad` spaces). */
export const toolOutput = (i: number, pad = 0): InputItem =>
  ({
    type: 'function_call_output',
    call_id: `call_${i}`,
    output: `result ${i}${' '.repeat(pad)}`,
  }) as InputItem;

/** A chain of `turns` responses made through the SDK, two tool outputs brought a turn: the last id. */
export async function chainThroughSdk(client: OpenAI, turns: number): Promise<string> {
  let prev: string | undefined;
  for (let t = 0; t < turns; t++)
    prev = (
      await client.responses.create({
        model: 'm1',
        input: [toolOutput(2 * t), toolOutput(2 * t + 1)] as never,
        ...(prev ? { previous_response_id: prev } : {}),
      })
    ).id;
  return prev!;
}
