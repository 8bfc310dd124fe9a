/**
 * The chat door's pass-through stream (no tools) relays the upstream's events as its bytes when
 * a read holds whole events that need nothing of toolproof's, and normalizes an error event to
 * the OpenAI error (stream-relay.ts). Which events need it was told by the payload's start: an
 * error event whose `error` is not its first key (`{"id":…,"error":{…}}`, as a proxy in front of
 * the backend may write it) went to the client as the upstream wrote it and the request counted
 * as clean when it came in one read, and as toolproof's error, the request failed, when the same
 * bytes were cut across two reads.
 */
import { describe, expect, it } from 'vitest';
import { chunkEvent, proxyInFrontOf } from '../support/harness.js';

const ERROR_EVENT = 'data: {"id":"c1","error":{"message":"boom","type":"server_error"}}\n\n';

const pair = proxyInFrontOf((req, res) => {
  const split = req.body.toString().includes('split');
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunkEvent({ role: 'assistant', content: 'hi' }));
  const end = () => setTimeout(() => res.end('data: [DONE]\n\n'), 20);
  setTimeout(() => {
    if (!split) {
      res.write(ERROR_EVENT);
      return end();
    }
    res.write(ERROR_EVENT.slice(0, 20));
    setTimeout(() => {
      res.write(ERROR_EVENT.slice(20));
      end();
    }, 20);
  }, 20);
});

async function streamed(how: 'whole' | 'split'): Promise<{ text: string; outcome: string }> {
  const id = `relay-error-${how}`;
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: 'm1', stream: true, messages: [{ role: 'user', content: how }] }),
  });
  const text = await res.text();
  const view = (await (await fetch(`${pair.proxy.origin}/inspect/api/requests/${id}`)).json()) as {
    record: { outcome: string };
  };
  return { text, outcome: view.record.outcome };
}

describe('an upstream error event whose "error" is not its first key, on the relayed chat stream', () => {
  it.each(['whole', 'split'] as const)(
    'read %s: the OpenAI error event, and the request failed',
    async (how) => {
      const got = await streamed(how);
      expect(got.text).toContain('"code":"TP_ERR_UPSTREAM_ERROR"');
      expect(got.text).not.toContain(ERROR_EVENT);
      expect(got.outcome).toBe('failed');
    },
  );
});
