/**
 * Requests another worker relayed here (worker-relay.ts): they come in on this worker's private
 * socket, which worker-relay marks, never on the port clients reach; a header can be sent by
 * anyone, the socket cannot.
 */
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';

const kRelayed = Symbol('toolproof.relayed');

/** The client's address as the receiving worker saw it (read on the private socket only). */
export const RELAYED_FOR = 'x-toolproof-relayed-for';

/** Marks a connection of the private socket. */
export function markRelayed(socket: Socket): void {
  (socket as Socket & { [kRelayed]?: true })[kRelayed] = true;
}

/** Whether this request came in on the private socket (relayed by another worker). */
export function relayedHere(request: FastifyRequest): boolean {
  return (request.socket as (Socket & { [kRelayed]?: true }) | undefined)?.[kRelayed] === true;
}

/** The client's address: the socket's, or for a relayed request the one the receiving worker saw. */
export function clientAddress(request: FastifyRequest): string | undefined {
  if (!relayedHere(request)) return request.socket?.remoteAddress;
  const given = request.headers[RELAYED_FOR];
  return typeof given === 'string' && given !== '' ? given : undefined;
}

/**
 * Bytes of held state the receiving worker placed in a relayed request's body (the items other
 * workers hold, front-doors/responses/gather.ts), read on the private socket only: counted where
 * the request is served with what it resolves there, as one worker counts them.
 */
export const PLACED_BYTES = 'x-toolproof-placed-bytes';

/** The bytes of held state placed in this request's body, here or by the worker that relayed it. */
export function placedBytes(request: FastifyRequest): number {
  if (request.tpPlaced !== undefined) return request.tpPlaced;
  if (!relayedHere(request)) return 0;
  const n = Number(request.headers[PLACED_BYTES]);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}
