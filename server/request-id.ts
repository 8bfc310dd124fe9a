/**
 * The request id: one id finds a request everywhere (the `x-request-id` response header, the
 * log line's `reqId`, the inspector (docs/inspect.md), the trace). A client's own id is kept
 * when it is a short token (so a caller's id is the one it already logs); anything else, or
 * none, gets a fresh UUID. Fastify uses it as `request.id` (genReqId in app.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header a client may send its id in, and every response carries it in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What a client-supplied id may look like: no spaces, no control bytes, not unbounded. */
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of a request: the client's when acceptable, otherwise a new UUID. */
export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && ACCEPTED.test(given) ? given : randomUUID();
}
