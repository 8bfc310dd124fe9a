/**
 * A fake upstream's streamed answers for the stream-bound tests (tests/redteam/stream-past-max-
 * tokens, relayed-stream-bounds): one token an event, on chat (`chat.completion.chunk`) or
 * `/v1/completions` (`text_completion`), written without end or for a bounded number of tokens.
 */
import type { ServerResponse } from 'node:http';

/** One streamed chunk of choice `index`: a chat delta, or a completion's text. */
export const sseChunk = (chat: boolean, text: string, finish: string | null, index = 0) =>
  chat
    ? {
        id: 'c',
        object: 'chat.completion.chunk',
        model: 'm1',
        choices: [{ index, delta: { content: text }, finish_reason: finish }],
      }
    : { id: 'c', object: 'text_completion', model: 'm1', choices: [{ index, text, finish_reason: finish }] };

/** One SSE event of `e` (a string as it is: `[DONE]`). */
export const sseEvent = (e: unknown) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`;

/** One token an event, without end, until toolproof hangs up; `onEvent` is told of each write. */
export function writeEndless(
  res: ServerResponse,
  chat: boolean,
  onEvent: () => void = () => undefined,
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const token = sseEvent(sseChunk(chat, 'x', null));
  let stop = false;
  res.on('close', () => {
    stop = true;
  });
  const pump = () => {
    for (let i = 0; i < 64 && !stop; i++) {
      onEvent();
      if (!res.write(token)) return void res.once('drain', pump);
    }
    if (!stop) setImmediate(pump);
  };
  pump();
}

/** `n` choices of `tokens` events each, interleaved, then the finish events, `usage` if asked, and [DONE]. */
export function writeBounded(
  res: ServerResponse,
  chat: boolean,
  tokens: number,
  n: number,
  usage = false,
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let body = '';
  for (let t = 0; t < tokens; t++) for (let i = 0; i < n; i++) body += sseEvent(sseChunk(chat, 'x', null, i));
  for (let i = 0; i < n; i++) body += sseEvent(sseChunk(chat, '', 'length', i));
  if (usage)
    body += sseEvent({
      id: 'c',
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: tokens * n, total_tokens: 1 + tokens * n },
    });
  res.end(body + sseEvent('[DONE]'));
}
