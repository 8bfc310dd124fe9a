/**
 * Function calls as the Responses item store keeps them (server/front-doors/responses/item-store.ts),
 * for the store's eviction and many-keys tests: call `i` has ids of one length, so each is
 * counted the same; an assistant answer for the listing tests.
 */
import type { OutputItem } from '../../protocol/responses/types.js';

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
