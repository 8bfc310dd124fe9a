/**
 * CORS, as permissive by default as vLLM and llama-server (any origin), so browser clients keep
 * working behind toolproof. Preflights are answered here, before the key check: a browser never
 * sends credentials on a preflight, and a preflight reaches no upstream.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
const DEFAULT_ALLOW_HEADERS = 'authorization, content-type, x-api-key, x-request-id';
/** Response headers a browser script may read. */
const EXPOSE_HEADERS = 'x-request-id, x-toolproof-attempts';
const PREFLIGHT_MAX_AGE_S = '600';
/** Echoed request header lists are bounded (they come from the client). */
const MAX_ALLOW_HEADERS_LENGTH = 1024;

/**
 * Returns the onRequest step, or null when CORS is off (no origins). The step sets the headers
 * with reply.raw.setHeader so that hijacked (streamed) responses carry them too, and returns
 * true when it answered a preflight itself.
 */
export function createCors(
  origins: readonly string[],
): ((request: FastifyRequest, reply: FastifyReply) => boolean) | null {
  if (origins.length === 0) return null;
  const any = origins.includes('*');
  const allowed = new Set(origins);
  return (request, reply) => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string') return false;
    const ok = any || allowed.has(origin);
    const raw = reply.raw;
    if (ok) {
      raw.setHeader('access-control-allow-origin', any ? '*' : origin);
      raw.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
    }
    // A list of origins makes the answer depend on the Origin header: caches must know.
    if (!any) raw.setHeader('vary', 'origin');
    const preflight =
      request.method === 'OPTIONS' && typeof request.headers['access-control-request-method'] === 'string';
    if (!preflight) return false;
    if (ok) {
      const asked = request.headers['access-control-request-headers'];
      raw.setHeader('access-control-allow-methods', ALLOW_METHODS);
      raw.setHeader(
        'access-control-allow-headers',
        typeof asked === 'string' && asked.length <= MAX_ALLOW_HEADERS_LENGTH && /^[\w\-, ]*$/.test(asked)
          ? asked
          : DEFAULT_ALLOW_HEADERS,
      );
      raw.setHeader('access-control-max-age', PREFLIGHT_MAX_AGE_S);
    }
    // A disallowed origin gets the same 204 without the allow headers: the browser blocks it.
    reply.code(204).send();
    return true;
  };
}
