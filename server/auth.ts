/**
 * Client API keys. Compared in constant time (both sides hashed to a fixed length first, and
 * every configured key is checked, so timing reveals neither length nor which key matched).
 * Keys are never logged: the logger redacts authorization headers.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ToolproofError } from '../protocol/errors.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export function createKeyChecker(keys: readonly string[]): ((request: FastifyRequest) => void) | null {
  if (keys.length === 0) return null;
  const digests = keys.map(digest);
  return (request) => {
    const auth = request.headers.authorization;
    let presented: string | undefined;
    if (typeof auth === 'string' && auth.toLowerCase().startsWith('bearer '))
      presented = auth.slice(7).trim();
    else if (typeof request.headers['x-api-key'] === 'string') presented = request.headers['x-api-key'];
    const candidate = digest(presented ?? '');
    let ok = false;
    for (const d of digests) ok = timingSafeEqual(d, candidate) || ok;
    if (!presented || !ok) throw new ToolproofError('TP_ERR_UNAUTHORIZED');
  };
}
