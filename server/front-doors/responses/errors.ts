/**
 * The Responses door's errors. Its bodies are OpenAI's (chat/errors.ts); its stream's failure is
 * its own: an `error` event, then `response.failed` carrying the response as it stands. Pure.
 */
import type { ToolproofError } from '../../../protocol/errors.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import type { ResponsesTranslator } from '../../../protocol/responses/stream.js';
import type { ResponsesEvent } from '../../../protocol/responses/types.js';

/** stringifyJson: the client's tools, echoed in the response, as it sent them. */
export function responsesSseEvent(e: ResponsesEvent): string {
  return `event: ${e.type}\ndata: ${stringifyJson(e)}\n\n`;
}

/** The failure events of the stream `translator` frames (its sequence numbers, its response). */
export function responsesErrorEvent(err: ToolproofError, translator: ResponsesTranslator): string {
  let text = '';
  for (const e of translator.fail({ code: err.wireCode, message: err.message, param: err.param }))
    text += responsesSseEvent(e);
  return text;
}
