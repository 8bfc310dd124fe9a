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
        // A CJK character is about a token: 3,300 bytes of them are over, 3,300 of ASCII are not.
        expect((await ask(on.url, '中'.repeat(1100))).status).toBe(400);
        expect((await ask(on.url, 'x'.repeat(3300))).status).toBe(200);
      } finally {
        await on.close();
        await off.close();
      }
    });
  }
});

describe('simulator enforceOutputBudget: vLLM refuses a budget the window cannot hold beside the prompt', () => {
  it("current vLLM's words, the prompt a bound; without a budget, or one that fits, served", async () => {
    const sim = await createSimulator({
      personality: 'vllm',
      scenario: 'demo',
      enforceWindow: true,
      enforceOutputBudget: true,
      maxModelLen: 1000,
    });
    try {
      const ask = (budget?: number) =>
        fetch(`${sim.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'm',
            ...(budget === undefined ? {} : { max_tokens: budget }),
            messages: [{ role: 'user', content: 'x'.repeat(800) }],
          }),
        });
      const over = await ask(900);
      expect(over.status).toBe(400);
      const body = (await over.json()) as { error: { message: string; param: string } };
      expect(body.error.message).toBe(
        "This model's maximum context length is 1000 tokens. However, you requested 900 output tokens and your prompt contains at least 101 input tokens, for a total of at least 1001 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=101)",
      );
      expect(body.error.param).toBe('input_tokens');
      expect(parseContextOverflow(body)).toEqual({ max: 1000, prompt: 101, completion: 900, bound: true });
      expect((await ask()).status).toBe(200);
      expect((await ask(100)).status).toBe(200);
    } finally {
      await sim.close();
    }
  });
});

describe("llama-server's overflow refusal carries n_prompt_tokens and n_ctx", () => {
  it('as server_task_result_error::to_json writes them (after code, message, type), and the window is read from them', async () => {
    const sim = await createSimulator({
      personality: 'llama-server',
      scenario: 'demo',
      enforceWindow: true,
      nCtx: 1000,
    });
    try {
      const res = await fetch(`${sim.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(8000) }] }),
      });
      expect(res.status).toBe(400);
      const raw = await res.text();
      const m =
        /^\{"error":\{"code":400,"message":"request \((\d+) tokens\) exceeds the available context size \(1000 tokens\), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":(\d+),"n_ctx":1000\}\}$/.exec(
          raw,
        );
      expect(m, raw).not.toBeNull();
      expect(m![2]).toBe(m![1]);
      // The fields are read, whatever the message says.
      const body = JSON.parse(raw) as { error: Record<string, unknown> };
      body.error.message = 'the request exceeds the available context size, try increasing it';
      expect(parseContextOverflow(body)).toEqual({ max: 1000, prompt: Number(m![1]) });
    } finally {
      await sim.close();
    }
  });
});
