/**
 * POST /v1/messages/count_tokens through the SDK's countTokens: the upstream's /tokenize when
 * it has one (vLLM's chat form, llama-server's text form), else the documented estimate, and
 * never an error for an upstream that cannot count.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { estimateTokens } from '../../protocol/anthropic/count.js';
import { toChatRequest } from '../../protocol/anthropic/request.js';
import { type Stack, startStack } from '../server/stack.js';
import { textPdf } from '../support/pdf.js';
import { activePolicies, runRequestPolicies } from '../../policies/composition.js';
import { POLICIES } from '../../policies/registry.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';

/**
 * The request as it goes upstream, which is what is counted: the same request policies as a
 * message (server/chat/prepare.ts), so a turn toolproof forces counts the synthetic answer tool.
 */
function asSent(p: typeof params) {
  const ctx = {
    model: 'sim',
    settings: DEFAULT_MODEL_SETTINGS,
    requiredRejected: false,
    attempt: 0,
    retriesUsed: 0,
  };
  return runRequestPolicies(
    activePolicies(POLICIES, DEFAULT_MODEL_SETTINGS),
    toChatRequest({ ...p, max_tokens: 1 }),
    ctx,
  ).request;
}

let stack: Stack | undefined;
let fake: Server | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await new Promise<void>((r) => (fake ? fake.close(() => r()) : r()));
  fake = undefined;
});

interface Seen {
  path: string;
  body: Record<string, unknown>;
}

/** A backend whose /tokenize behaves like vLLM's or llama-server's. */
async function fakeTokenizer(
  kind: 'vllm' | 'vllm-old' | 'llama-server',
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  fake = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      seen.push({ path: req.url ?? '', body });
      res.setHeader('content-type', 'application/json');
      if (req.url !== '/tokenize') {
        res.statusCode = 404;
        res.end('{"detail":"Not Found"}');
        return;
      }
      if (kind === 'vllm-old' && 'tools' in body) {
        // Older vLLM: extra fields are forbidden.
        res.statusCode = 400;
        res.end(
          '{"object":"error","message":"Extra inputs are not permitted","type":"BadRequestError","code":400}',
        );
        return;
      }
      if (kind === 'vllm' || kind === 'vllm-old') {
        res.end(
          JSON.stringify({ count: 42, max_model_len: 4096, tokens: Array(42).fill(7), token_strs: null }),
        );
        return;
      }
      // llama-server: tokenizes "content", an empty list when there is none.
      const content = typeof body.content === 'string' ? body.content : '';
      res.end(JSON.stringify({ tokens: Array(Math.ceil(content.length / 3)).fill(1) }));
    });
  });
  await new Promise<void>((r) => fake!.listen(0, '127.0.0.1', r));
  const port = (fake.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/v1`, seen };
}

const params = {
  model: 'sim',
  system: [{ type: 'text' as const, text: 'You are a coding agent.' }],
  messages: [{ role: 'user' as const, content: 'Count me, please.' }],
  tools: [
    {
      name: 'read_file',
      description: 'Read a file',
      input_schema: { type: 'object' as const, properties: { path: { type: 'string' } } },
    },
  ],
};

async function count(s: Stack): Promise<{ input_tokens: number; source: string | null }> {
  const client = new Anthropic({ baseURL: s.origin, apiKey: 'x', maxRetries: 0 });
  const { data, response } = await client.messages.countTokens(params).withResponse();
  return { input_tokens: data.input_tokens, source: response.headers.get('x-toolproof-token-count') };
}

describe('count_tokens', () => {
  it("vLLM: the chat-templated count from the origin's /tokenize", async () => {
    const up = await fakeTokenizer('vllm');
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: up.url } });
    expect(await count(stack)).toEqual({ input_tokens: 42, source: 'tokenize' });
    expect(up.seen).toHaveLength(1);
    expect(up.seen[0]!.path).toBe('/tokenize');
    const body = up.seen[0]!.body as {
      messages: unknown[];
      tools: unknown[];
      add_generation_prompt: boolean;
    };
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Count me, please.' },
    ]);
    // The client's tool and the synthetic answer tool the turn is forced with, as sent upstream.
    expect(body.tools).toEqual(asSent(params).tools);
    expect((body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
      'read_file',
      'final_answer',
    ]);
    expect(body.add_generation_prompt).toBe(true);
  });

  it('older vLLM refuses "tools" in /tokenize: counted without them, the tools estimated', async () => {
    const up = await fakeTokenizer('vllm-old');
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: up.url } });
    const tools = asSent(params).tools!;
    const toolTokens = estimateTokens({ model: 'sim', messages: [], tools });
    expect(toolTokens).toBeGreaterThan(5);
    expect(await count(stack)).toEqual({ input_tokens: 42 + toolTokens, source: 'tokenize' });
    expect(up.seen.map((r) => 'tools' in r.body)).toEqual([true, false]);
  });

  it('llama-server: the chat form counts nothing there, so the text form is asked', async () => {
    const up = await fakeTokenizer('llama-server');
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: up.url } });
    const r = await count(stack);
    expect(r.source).toBe('tokenize');
    expect(up.seen).toHaveLength(3);
    const content = up.seen[2]!.body.content as string;
    expect(content).toContain('Count me, please.');
    expect(content).toContain('read_file');
    expect(r.input_tokens).toBe(Math.ceil(content.length / 3));
  });

  it('no /tokenize (the simulator): the estimate, 4 characters per token', async () => {
    stack = await startStack();
    const r = await count(stack);
    expect(r.source).toBe('estimate');
    expect(r.input_tokens).toBe(estimateTokens(asSent(params)));
    // More than the client's request alone: the forced turn's answer tool is part of the prompt.
    expect(r.input_tokens).toBeGreaterThan(estimateTokens(toChatRequest({ ...params, max_tokens: 1 })));
    expect(r.input_tokens).toBeGreaterThan(10);
  });

  it('a PDF document counts as the text the model reads (extracted), on /tokenize and in the estimate', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `Line ${i}: the audit number is 58213 and more text.`);
    const pdf = (pageLines: string[]) => ({
      ...params,
      messages: [
        {
          role: 'user' as const,
          content: [
            {
              type: 'document' as const,
              title: 'report.pdf',
              source: {
                type: 'base64' as const,
                media_type: 'application/pdf' as const,
                data: textPdf([pageLines.join('\n')]).toString('base64'),
              },
            },
            { type: 'text' as const, text: 'What is the audit number?' },
          ],
        },
      ],
    });
    const up = await fakeTokenizer('vllm');
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: up.url } });
    const client = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0 });
    await client.messages.countTokens(pdf(lines));
    const asked = JSON.stringify(up.seen.find((s) => s.path === '/tokenize')!.body.messages);
    expect(asked).toContain('Line 39: the audit number is 58213');
    expect(asked).toContain('text extracted by the proxy');
    expect(asked).not.toContain('it was not extracted');
    await stack.close();
    // The estimate (no /tokenize) grows with the document's text, not with a one-line note.
    stack = await startStack();
    const estimate = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0 });
    const long = (await estimate.messages.countTokens(pdf(lines))).input_tokens;
    const short = (await estimate.messages.countTokens(pdf(lines.slice(0, 1)))).input_tokens;
    expect(long - short).toBeGreaterThan((39 * 50) / 4 - 20);
  });

  it('an unreachable upstream still gets an estimate, not an error', async () => {
    const up = await fakeTokenizer('vllm');
    const dead = up.url;
    await new Promise<void>((r) => fake!.close(() => r()));
    fake = undefined;
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: dead } });
    expect((await count(stack)).source).toBe('estimate');
  });

  it('a malformed request is still a 400 in Anthropic shape', async () => {
    stack = await startStack();
    const res = await fetch(`${stack.origin}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });
});
