/**
 * The backend's guided decoding refused a schema of the request for features it cannot compile,
 * read from the error body. Pure. Only vLLM's xgrammar wording counts, the one whose keywords are
 * known (strip.ts): "The provided JSON schema contains features not supported by xgrammar."
 * (vllm/v1/structured_output/backend_xgrammar.py, a 400 when the backend is xgrammar by name;
 * `auto` falls back to guidance instead).
 */
import { isObject } from '../../protocol/is-object.js';

const XGRAMMAR = /features\s+not\s+supported\s+by\s+xgrammar/i;

export function refusesSchemaFeatures(status: number, body: unknown): boolean {
  if (status !== 400 && status !== 422 && status < 500) return false;
  const inner = isObject(body) && isObject(body.error) ? body.error : body;
  const message = isObject(inner) ? inner.message : inner;
  return typeof message === 'string' && XGRAMMAR.test(message.slice(0, 2000));
}
