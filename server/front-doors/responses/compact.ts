/**
 * POST /v1/responses/compact (the openai SDK's `responses.compact`: the Agents SDK's
 * OpenAIResponsesCompactionSession calls it once a session's history grows, Codex's remote
 * compaction too). Before, a 404: the session's run failed at its first compaction, and on every
 * run after. Now the conversation (`input`, or the one `previous_response_id` continues) goes
 * through the Responses door as one more turn whose last user message asks the model for a
 * summary (no tools, not kept), and the answer is OpenAI's compacted shape: the user messages of
 * `input`, then a `compaction` item whose `encrypted_content` holds that summary in the clear
 * (protocol/responses/compaction.ts). Sent back, the item becomes the summary on any worker.
 */
import { randomBytes } from 'node:crypto';
import { ToolproofError } from '../../../protocol/errors.js';
import { isObject } from '../../../protocol/is-object.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import { COMPACT_INSTRUCTION, encodeOwnCompaction } from '../../../protocol/responses/compaction.js';
import { completionToResponse } from '../../../protocol/responses/stream.js';
import type { InputItem } from '../../../protocol/responses/types.js';
import { openAIErrorBody } from '../chat/errors.js';
import type { FrontDoor } from '../types.js';
import { namedState, responses } from './index.js';
import { gatherItems } from './gather.js';

type Turn = ReturnType<typeof responses.open> & { kept: InputItem[] };

/** The user messages of `input`, as sent: what OpenAI's compaction keeps beside its item. */
function userMessages(input: unknown): InputItem[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input } as InputItem];
  if (!Array.isArray(input)) return [];
  const out: InputItem[] = [];
  for (const item of input)
    if (isObject(item) && (item.type === undefined || item.type === 'message') && item.role === 'user')
      out.push({ ...item, type: 'message' } as InputItem);
  return out;
}

export const responsesCompact: FrontDoor<'responses', Turn> = {
  api: 'responses',
  path: '/v1/responses/compact',
  schema: {
    summary:
      'Compact a conversation (OpenAI Responses API): its user messages and a summary the model wrote.',
    tags: ['openai'],
    body: {
      $id: 'ResponsesCompactRequest',
      type: 'object',
      required: ['model'],
      properties: { model: { type: 'string' } },
      additionalProperties: true,
    },
  },
  errorBody: openAIErrorBody,
  errorEvent: (err, turn) => responses.errorEvent(err, turn),
  open(request, reply, state) {
    const body = (isObject(request.body) ? request.body : {}) as Record<string, unknown>;
    const input =
      typeof body.input === 'string'
        ? [{ type: 'message', role: 'user', content: body.input }]
        : Array.isArray(body.input)
          ? body.input
          : [];
    if (input.length === 0 && typeof body.previous_response_id !== 'string')
      throw new ToolproofError('TP_ERR_INVALID_FIELD', {
        param: 'input',
        message: 'input is empty: send the conversation to compact, or previous_response_id.',
      });
    request.body = {
      model: body.model,
      input: [...input, { type: 'message', role: 'user', content: COMPACT_INSTRUCTION }],
      ...(typeof body.instructions === 'string' ? { instructions: body.instructions } : {}),
      ...(typeof body.previous_response_id === 'string'
        ? { previous_response_id: body.previous_response_id }
        : {}),
      store: false,
      stream: false,
    };
    return { ...responses.open(request, reply, state), kept: userMessages(body.input) };
  },
  callOf: (turn) => turn.call,
  heldBy: (request) => namedState(request, true),
  gatherHeld: gatherItems,
  answer(reply, result, turn) {
    if (result.kind !== 'completion')
      throw new ToolproofError('TP_ERR_INTERNAL', {
        message: 'responses compact: unexpected raw chat result',
      });
    const response = completionToResponse(result.completion, turn, result.usage);
    const compacted = {
      id: `resp_${randomBytes(12).toString('hex')}`,
      object: 'response.compaction',
      created_at: turn.createdAt,
      output: [
        ...turn.kept,
        {
          type: 'compaction',
          id: `cmp_${randomBytes(12).toString('hex')}`,
          encrypted_content: encodeOwnCompaction(response.output_text),
        },
      ],
      usage: response.usage,
    };
    return reply.type('application/json; charset=utf-8').send(stringifyJson(compacted));
  },
  output: (reply, turn, state) => responses.output(reply, turn, state),
};
