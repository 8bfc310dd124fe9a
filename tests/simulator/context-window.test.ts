import { describe, expect, it } from 'vitest';
import { parseContextOverflow } from '../../protocol/context-overflow.js';
import { createSimulator } from '../../simulator/index.js';

describe("simulator enforceWindow: a prompt past the window is the backend's own 400", () => {
  for (const personality of ['vllm', 'llama-server'] as const) {
    it(`${personality}: refused past the window, served within it; off by default`, async () => {
      const on = await createSimulator({
        personality,
        scenario: 'demo',
        enforceWindow: true,
        maxModelLen: 1000,
        nCtx: 1000,
      });
      const off = await createSimulator({ personality, scenario: 'demo', maxModelLen: 1000, nCtx: 1000 });
      try {
        const ask = (url: string, text: string) =>
          fetch(`${url}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] }),
          });
        const over = await ask(on.url, 'x'.repeat(8000));
        expect(over.status).toBe(400);
        const body = await over.json();
        expect(parseContextOverflow(body)).toMatchObject({ max: 1000 });
        expect((await ask(on.url, 'hello')).status).toBe(200);
        expect((await ask(off.url, 'x'.repeat(8000))).status).toBe(200);
      } finally {
        await on.close();
        await off.close();
      }
    });
  }
});
