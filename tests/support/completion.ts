/**
 * Fake upstream replies that need no test runner: also for the probes run in child processes
 * outside vitest (harness.ts, which re-exports this, imports vitest).
 */
import type { ServerResponse } from 'node:http';

/**
 * Answers with a non-streamed `chat.completion` of one choice: `message` (its role defaults to
 * assistant), `finish`, and `extra` top-level fields (usage, ...). The fake upstreams' common reply.
 */
export function sendCompletion(
  res: ServerResponse,
  message: Record<string, unknown>,
  finish = 'stop',
  extra: Record<string, unknown> = {},
  model = 'm1',
): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
      ...extra,
    }),
  );
}
