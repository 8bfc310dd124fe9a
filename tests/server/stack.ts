/**
 * Test harness: the real toolproof server on loopback in front of the project's own backend
 * simulator (vLLM or llama-server personality), and a real `openai` client pointed at it.
 */
import type { Server } from 'node:http';
import OpenAI from 'openai';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { type Config, loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/index.js';
import { sharedPdfPool } from '../support/pdf-pool.js';

export interface Stack {
  sim: Simulator;
  app: ToolproofApp;
  /** toolproof's base URL including /v1 */
  url: string;
  origin: string;
  client: OpenAI;
  close(): Promise<void>;
}

export interface StackOptions {
  sim?: Partial<SimulatorOptions>;
  env?: Record<string, string>;
  file?: Parameters<typeof loadConfig>[1];
  config?: Partial<Config>;
  apiKey?: string;
  /**
   * Model names the upstream is taken to serve, as toolproof learns them from its /v1/models
   * when /ready or /v1/models asks: their metrics carry their own label from the first request
   * (see ServedModelLabels). Default: the names the tests use.
   */
  served?: string[];
}

/** The model names the tests send. */
export const TEST_MODELS = ['m', 'm1', 'sim'];

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const sim = await createSimulator({ personality: 'vllm', ...options.sim });
  const base = loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url, ...options.env }, options.file);
  // The upstream is the built-in simulator: its `x-sim-scenario` header is forwarded.
  const config: Config = Object.freeze({ ...base, simulator: true, ...options.config });
  const app = await buildApp(config, { logger: false, pdfPool: sharedPdfPool() });
  app.toolproof.modelLabels.serve(options.served ?? TEST_MODELS);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const origin = `http://127.0.0.1:${port}`;
  const client = new OpenAI({
    baseURL: `${origin}/v1`,
    apiKey: options.apiKey ?? 'unused',
    maxRetries: 0,
    timeout: 15_000,
  });
  return {
    sim,
    app,
    url: `${origin}/v1`,
    origin,
    client,
    async close() {
      await closeApp(app);
      await sim.close();
    },
  };
}

export const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city'],
    },
  },
};

/**
 * One turn of an agent's conversation about the weather on chat completions (the inspector's
 * session tests): the model's reply appended to `messages`, then the tool's `result`, or, when it
 * answered instead, the user's `next` question.
 */
export async function weatherTurn(
  stack: Stack,
  messages: Array<Record<string, unknown>>,
  headers: Record<string, string>,
  { result = 'sunny', next = 'And tomorrow?' }: { result?: string; next?: string } = {},
): Promise<void> {
  const res = await stack.client.chat.completions.create(
    { model: 'sim', messages: messages as never, tools: [weatherTool] },
    { headers },
  );
  const msg = res.choices[0]!.message;
  messages.push(msg as never);
  if (msg.tool_calls?.length)
    messages.push({ role: 'tool', tool_call_id: msg.tool_calls[0]!.id, content: result });
  else messages.push({ role: 'user', content: next });
}

/** get_weather({city}) and nothing else: arguments with another field fail validation. */
export const strictWeatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

/** Reads an SSE body into its data payloads. */
export async function readSse(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice(6));
}

export interface Collected {
  content: string;
  finish: string | null;
  calls: Array<{ id?: string; name: string; args: string }>;
  usage: unknown;
  chunks: number;
  /** Chunks that carried some content: more than one means the text arrived live. */
  contentChunks: number;
}

/** Folds an openai-client chunk stream into content, assembled tool calls, finish reason and usage. */
export async function collectStream(
  stream: AsyncIterable<{
    usage?: unknown;
    choices: Array<{
      delta: {
        content?: string | null;
        tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }>;
      };
      finish_reason: string | null;
    }>;
  }>,
): Promise<Collected> {
  const out: Collected = { content: '', finish: null, calls: [], usage: null, chunks: 0, contentChunks: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.content) out.contentChunks++;
      out.content += c.delta.content ?? '';
      for (const tc of c.delta.tool_calls ?? []) {
        const slot = (out.calls[tc.index] ??= { name: '', args: '' });
        if (tc.id) slot.id = tc.id;
        slot.name += tc.function?.name ?? '';
        slot.args += tc.function?.arguments ?? '';
      }
      if (c.finish_reason) out.finish = c.finish_reason;
    }
  }
  return out;
}

export async function waitFor(cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * app.close() waits for every client connection to end; a keep-alive socket a test client left
 * behind can hold it past the hook timeout. After a grace, the rest are cut. (A connection that
 * never carried a byte, what an aborted request leaves, the app cuts itself as it closes:
 * server/connections.ts.)
 */
export async function closeApp(app: { close(): Promise<unknown>; server: Server }): Promise<void> {
  const cut = setTimeout(() => app.server.closeAllConnections(), 2_000);
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
  }
}
