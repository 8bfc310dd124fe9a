/**
 * A key's model allow-list holds for the models routing sends it to, not only the one it names:
 * a key held to `small` was served by `big` (403 when asked for directly) by sending a prompt
 * past small's window (its `longContext` route) or when small's upstream refused (its
 * `fallback`). Now those routes are taken only to a model the key may use; a key without a list
 * takes them as before.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

const NARROW = 'sk-narrow-routes-000001';
const WIDE = 'sk-wide-routes-0000002';

const pair = proxyInFrontOf(
  (req, res) => {
    const body = JSON.parse(req.body.toString()) as { model: string; messages: Array<{ content: string }> };
    if (body.model === 'busy') {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(textCompletion(`served by ${body.model}`));
  },
  {
    file: (url) => ({
      models: {
        small: { upstream: url, contextWindow: 200, longContext: 'big' },
        busy: { upstream: url, fallback: ['big'] },
        big: { upstream: url },
      },
      keys: [
        { name: 'narrow', key: NARROW, models: ['small', 'busy'] },
        { name: 'wide', key: WIDE },
      ],
    }),
  },
);

async function ask(key: string, model: string, content = 'hi'): Promise<{ status: number; text: string }> {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, text: await res.text() };
}

describe("routing stays within a key's allow-list", () => {
  it('a prompt past the window: the long-context model only for a key that may use it', async () => {
    expect((await ask(NARROW, 'big')).status).toBe(403);
    const long = 'x'.repeat(4000);
    const narrow = await ask(NARROW, 'small', long);
    expect(narrow.status).toBe(200);
    expect(narrow.text).toContain('served by small'); // before: served by big
    expect((await ask(WIDE, 'small', long)).text).toContain('served by big');
  });

  it('a refused upstream: the fallback model only for a key that may use it', async () => {
    const narrow = await ask(NARROW, 'busy');
    expect(narrow.status).toBe(503); // before: 200, served by big
    expect(narrow.text).not.toContain('served by big');
    expect((await ask(WIDE, 'busy')).text).toContain('served by big');
  });
});
