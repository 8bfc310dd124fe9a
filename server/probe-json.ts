/**
 * A probe's JSON answer (llama-server's /props, a /v1/models list) read within bounds: at most
 * `limit` bytes (the body is cut and dropped past it) and not parsed past the upstream JSON
 * bounds (nesting, distinct keys: protocol/completion-shape.ts). undici's `body.json()` kept
 * the whole body whatever its size: an upstream answering /props with an endless body grew the
 * heap until the process died, probed again on traffic while concurrency is `auto`.
 */
import type { Dispatcher } from 'undici';
import { upstreamJsonProblem } from '../protocol/completion-shape.js';

/** What a probe reads at most: a /props or a model list is a few KB. */
export const PROBE_BODY_LIMIT = 1024 * 1024;

/** The body's JSON, or undefined: too long, not JSON, past the bounds, or a read that failed. */
export async function readProbeJson(
  body: Dispatcher.ResponseData['body'],
  limit = PROBE_BODY_LIMIT,
): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        body.destroy();
        return undefined;
      }
      chunks.push(chunk);
    }
  } catch {
    return undefined;
  }
  const bytes = Buffer.concat(chunks, size);
  if (upstreamJsonProblem(bytes) !== undefined) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
