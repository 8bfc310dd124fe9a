/**
 * A Responses stream another worker answers (server/worker-relay.ts), watched as its bytes pass so
 * that, when that worker exits mid-way, the stream still ends in the API's shape: an `error` event
 * and `response.failed`, numbered on from the last event passed on, as the door ends a stream
 * that failed (errors.ts). Before, the relay cut the connection: the SDK read a network error, not
 * the API's failure.
 *
 * Only two facts are kept: the last `sequence_number` (each event's JSON ends with it: stream.ts
 * `ev`) and the response's id (the first field of the response that `response.created` carries,
 * or the path's for a resumed stream). Each line is looked at by its first HEAD and last TAIL
 * characters only, so a 10 MB `response.completed` costs one scan for its newlines and no copy.
 */
import type { FastifyRequest } from 'fastify';
import type { ToolproofError } from '../../../protocol/errors.js';
import type { RelayedStreamWatch } from '../../worker-relay.js';
import { responsesSseEvent } from './errors.js';

const HEAD = 160;
const TAIL = 48;
const SEQUENCE = /"sequence_number":(\d{1,15})\}\s*$/;
const CREATED =
  /^data: \{"type":"response\.(?:created|queued|in_progress)","response":\{"id":"([A-Za-z0-9_-]{1,128})"/;

export function watchRelayedResponses(request: FastifyRequest): RelayedStreamWatch {
  const param = (request.params as { id?: unknown } | undefined)?.id;
  let id = request.method === 'GET' && typeof param === 'string' ? param.slice(0, 128) : undefined;
  let last = -1;
  let head = '';
  let tail = '';
  const line = () => {
    if (head.startsWith('data: ')) {
      const seq = SEQUENCE.exec(tail)?.[1];
      if (seq !== undefined) last = Number(seq);
      if (id === undefined) id = CREATED.exec(head)?.[1];
    }
    head = '';
    tail = '';
  };
  return {
    push(chunk) {
      // latin1: one character a byte; what is read here (digits, ids, field names) is ASCII.
      const text = chunk.toString('latin1');
      let from = 0;
      for (;;) {
        const nl = text.indexOf('\n', from);
        const end = nl === -1 ? text.length : nl;
        if (head.length < HEAD) head += text.slice(from, Math.min(end, from + HEAD - head.length));
        tail = end - from >= TAIL ? text.slice(end - TAIL, end) : (tail + text.slice(from, end)).slice(-TAIL);
        if (nl === -1) return;
        line();
        from = nl + 1;
      }
    },
    fail(err: ToolproofError) {
      const error = { code: err.wireCode, message: err.message, param: err.param };
      let text = responsesSseEvent({ type: 'error', ...error, sequence_number: ++last });
      if (id !== undefined)
        text += responsesSseEvent({
          type: 'response.failed',
          response: {
            id,
            object: 'response',
            status: 'failed',
            error: { code: error.code, message: error.message },
            output: [],
          },
          sequence_number: ++last,
        });
      return text;
    },
  };
}
