/**
 * What an upstream refused of a model (images, schema keywords; the tool_choice fallback too) is
 * remembered per upstream and model name as sent upstream, at most 4,096 entries. Names the
 * default upstream gets are whatever clients write: llama-server serves any name, and one
 * without --mmproj refuses an image under every one of them. A key holder sending an image under
 * a new 1 MB name each time grew the memory by 1 MB a request (4,096 entries of up to the 32 MiB
 * body limit: gigabytes, held for fallbackTtlSeconds). A long name is now held by its digest:
 * the same name still finds its entry. Through the server, over a real socket.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';

const pair = proxyInFrontOf((req, res) => {
  if (req.body.includes('"image_url"')) {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        error: {
          code: 500,
          message:
            'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
          type: 'server_error',
        },
      }),
    );
    return;
  }
  sendCompletion(res, { role: 'assistant', content: 'a cat' }, 'stop');
});

const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const send = (model: string) =>
  fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: PNG } },
          ],
        },
      ],
    }),
  });

describe('refusals remembered under client-written model names', () => {
  it('a 1 MB name costs the memory a digest, and the same name is still remembered', async () => {
    const memory = pair.proxy.app.toolproof.chatDeps.refusals!;
    const names = Array.from({ length: 8 }, (_, i) => `${String(i)}${'m'.repeat(1024 * 1024)}`);
    for (const name of names) {
      const res = await send(name);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // Before: every name whole in a key (8 MB and more).
    expect(memory.keyChars).toBeLessThan(8 * 1024);
    // The same long name again: remembered, so the image goes as a note from the start.
    const before = pair.upstream.requests.length;
    const again = await send(names[0]!);
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    expect(pair.upstream.requests.length - before).toBe(1);
    expect(pair.upstream.requests.at(-1)!.body.includes('"image_url"')).toBe(false);
  }, 60_000);
});
