/**
 * A session's export (GET /inspect/api/session/export) held every request of the session the
 * ring held, each as its view: about twice the ring's bytes of it (the attempt's request again as
 * curl, quoted). A session that filled a large ring (TOOLPROOF_CAPTURE_MB is the operator's, up
 * to 65536) came as one JSON string: the event loop stalled ~14 ms a MB of it, and past V8's
 * longest string the export failed. Now each worker's part holds the session's newest requests up
 * to 16 MiB of JSON (EXPORT_CHARS), and the file says how many older ones it left out.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

/** server/capture/query.ts EXPORT_CHARS. */
const EXPORT_CHARS = 16 * 1024 * 1024;

const pair = proxyInFrontOf(
  answerJson(textCompletion('ok')),
  // A ring of 12 MB: a session filling it exports as ~24 MB of JSON.
  { env: { TOOLPROOF_CAPTURE_MB: '12' } },
);

interface Exported {
  session: { turns: unknown[]; omitted?: number };
  requests: Array<{ record: { clientRequest: { body: { text: string } } } }>;
}

describe('a session export over a full ring', () => {
  it('holds the newest requests up to 16 MiB of JSON and says how many it left out', async () => {
    // Apostrophes: each is five characters of the curl's JSON.
    const text = "'".repeat(200_000);
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-claude-code-session-id': 'big' },
        body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: `turn ${i} ${text}` }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const sessions = (await (await fetch(`${pair.proxy.origin}/inspect/api/sessions`)).json()) as {
      sessions: Array<{ session: string; requests: number }>;
    };
    const held = sessions.sessions[0]!;
    const res = await fetch(
      `${pair.proxy.origin}/inspect/api/session/export?key=${encodeURIComponent(held.session)}`,
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body.length).toBeLessThan(EXPORT_CHARS + 1024 * 1024);
    const file = JSON.parse(body) as Exported;
    expect(file.session.omitted).toBeGreaterThan(0);
    expect(file.requests.length + file.session.omitted!).toBe(held.requests);
    expect(file.session.turns).toHaveLength(file.requests.length);
    // The newest kept, in order.
    expect(file.requests.at(-1)!.record.clientRequest.body.text).toContain('turn 39 ');
  }, 60_000);
});
