/**
 * Client API keys. Compared in constant time (both sides hashed to a fixed length first, and
 * every configured key is checked, so timing reveals neither length nor which key matched).
 * Keys are never logged: the logger redacts authorization headers.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ToolproofError } from '../protocol/errors.js';
import type { ProtectableOp } from './config.js';

/**
 * Deny by default: with keys configured, every route needs one except these. The decision is
 * made on the route the router matched (request.routeOptions.url), never on the URL as the
 * client spelled it: "/%761/chat/completions" and "http://x/v1/chat/completions" match the
 * same route as "/v1/chat/completions" and so need the same key. Unmatched requests need one.
 */
export function isOpenRoute(routeUrl: string | undefined, protectOps: readonly ProtectableOp[]): boolean {
  if (routeUrl === '/health' || routeUrl === '/ready') return true;
  if (routeUrl === '/metrics') return !protectOps.includes('metrics');
  if (routeUrl === '/docs' || routeUrl?.startsWith('/docs/')) return !protectOps.includes('docs');
  return false;
}

/**
 * The inspector's pages (docs/inspect.md) also take the key as the password of HTTP Basic
 * authentication (any user name): the one way a browser sends a credential on a plain page load
 * without a script. Only there: the API routes keep their documented headers.
 */
function acceptsBasic(request: FastifyRequest): boolean {
  const url = request.routeOptions.url;
  return url === '/inspect' || url?.startsWith('/inspect/') === true;
}

function basicPassword(encoded: string): string | undefined {
  const decoded = Buffer.from(encoded.slice(0, 4096), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export function createKeyChecker(keys: readonly string[]): ((request: FastifyRequest) => void) | null {
  if (keys.length === 0) return null;
  const digests = keys.map(digest);
  return (request) => {
    const auth = request.headers.authorization;
    let presented: string | undefined;
    if (typeof auth === 'string' && auth.toLowerCase().startsWith('bearer '))
      presented = auth.slice(7).trim();
    else if (typeof auth === 'string' && auth.toLowerCase().startsWith('basic ') && acceptsBasic(request))
      presented = basicPassword(auth.slice(6).trim());
    else if (typeof request.headers['x-api-key'] === 'string') presented = request.headers['x-api-key'];
    const candidate = digest(presented ?? '');
    let ok = false;
    for (const d of digests) ok = timingSafeEqual(d, candidate) || ok;
    if (!presented || !ok) throw new ToolproofError('TP_ERR_UNAUTHORIZED');
  };
}
