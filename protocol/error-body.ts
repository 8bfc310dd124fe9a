/**
 * Reading upstream error bodies: every backend words its errors differently (OpenAI's
 * {error:{message}}, FastAPI's {detail}, plain text). Pure, shared by server/ and policies/.
 */

/** Pulls a human message out of whatever an upstream sent as an error body. */
export function upstreamErrorMessage(body: unknown, fallback: string): string {
  if (typeof body === 'string') return body.trim().slice(0, 4000) || fallback;
  if (body && typeof body === 'object') {
    const o = body as Record<string, unknown>;
    const inner = o.error;
    if (typeof inner === 'string') return inner;
    if (
      inner &&
      typeof inner === 'object' &&
      typeof (inner as Record<string, unknown>).message === 'string'
    ) {
      return (inner as Record<string, string>).message!;
    }
    if (typeof o.message === 'string') return o.message;
    if (typeof o.detail === 'string') return o.detail;
    if (Array.isArray(o.detail)) return JSON.stringify(o.detail);
  }
  return fallback;
}
