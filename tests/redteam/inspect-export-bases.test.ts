/**
 * A session's export (GET /inspect/api/session/export) holds each request's diff base: for a
 * Responses request, its conversation as the store holds it now, translated, up to a captured
 * body (TOOLPROOF_CAPTURE_BODY_KB) for each record however small the record. The export's bound
 * (16 MiB of JSON, redteam28) counted the views, not the bases: a session of tiny requests naming
 * one conversation that grew since (POST /v1/conversations/{id}/items, no model call) exported a
 * whole base per request, past the bound by as many as the ring held (100 requests: 26 MB at the
 * default 256 KB; a 10 MB ring holds thousands). Now the bases, newest first, share a bound of
 * their own, and each past it says it was left out.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

/** server/capture/query.ts EXPORT_CHARS. */
const EXPORT_CHARS = 16 * 1024 * 1024;

const pair = proxyInFrontOf(
  answerJson(textCompletion('ok')),
  // Bases of 2 MB each: 24 requests past the bound with a few items added.
  { env: { TOOLPROOF_CAPTURE_BODY_KB: '2048' } },
);

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

interface Exported {
  requests: Array<{ diffBase: { against: string | null; text: string; note?: string } }>;
}

describe("a session export's diff bases", () => {
  it('stay within the bound, the newest kept, the older ones saying they were left out', async () => {
    const conversation = (await (await post('/v1/conversations', { items: [] })).json()) as { id: string };
    for (let i = 0; i < 24; i++) {
      const res = await post(
        '/v1/responses',
        { model: 'm1', input: `turn ${i}`, conversation: conversation.id },
        { 'x-claude-code-session-id': 'grown' },
      );
      expect(res.status).toBe(200);
      await res.text();
    }
    // Grown to ~1.9 MB after the requests were captured, with no model call.
    for (let i = 0; i < 4; i++) {
      const res = await post(`/v1/conversations/${conversation.id}/items`, {
        items: [{ type: 'message', role: 'user', content: `${i}`.repeat(480_000) }],
      });
      expect(res.status).toBe(200);
    }
    const sessions = (await (await fetch(`${pair.proxy.origin}/inspect/api/sessions`)).json()) as {
      sessions: Array<{ session: string; requests: number }>;
    };
    const held = sessions.sessions.find((s) => s.session.includes('grown'))!;
    expect(held.requests).toBe(24);
    const res = await fetch(
      `${pair.proxy.origin}/inspect/api/session/export?key=${encodeURIComponent(held.session)}`,
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    // The views are a few KB each: the bases' bound and room for them.
    expect(body.length).toBeLessThan(EXPORT_CHARS + 2 * 1024 * 1024);
    const file = JSON.parse(body) as Exported;
    expect(file.requests).toHaveLength(24);
    const newest = file.requests.at(-1)!.diffBase;
    expect(newest.against).toBe('translated');
    expect(newest.text).toContain('3'.repeat(1000));
    const oldest = file.requests[0]!.diffBase;
    expect(oldest.against).toBeNull();
    expect(oldest.note).toContain('left out of this export');
  }, 60_000);
});
