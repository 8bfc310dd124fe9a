/**
 * One run's servers: the built-in simulator (vLLM personality) playing the scripted small model,
 * and the real toolproof app on loopback in front of it, its JSON log lines captured. With
 * `record`, a recording hop in front of toolproof keeps every request body the agent sent.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp, type ToolproofApp } from '../../../server/app.js';
import { askBackends } from '../../../server/backend-probes.js';
import { loadConfig } from '../../../server/config.js';
import { createSimulator, type Simulator } from '../../../simulator/index.js';
import { closeApp } from '../../server/stack.js';
import { forwardTo } from '../../support/forward.js';
import { agentModel, type Mode } from './model.js';
import type { Task } from './tasks.js';

/** The model name the upstream serves (and agents send, unless a YAML maps other names onto it). */
export const UPSTREAM_MODEL = 'small-coder';
/** The backend's reported max_model_len in the suite. */
export const SUITE_WINDOW = 131072;

/** Claude Code's own model names, as a user keeps them, and the YAML that maps them onto the upstream's model. */
export const CLAUDE_NAMES = { main: 'claude-sonnet-4-5', small: 'claude-haiku-4-5' };

export function claudeNamesConfig(upstreamUrl: string): Parameters<typeof loadConfig>[1] {
  return {
    models: {
      [CLAUDE_NAMES.main]: { upstream: upstreamUrl, upstreamModel: UPSTREAM_MODEL },
      [CLAUDE_NAMES.small]: { upstream: upstreamUrl, upstreamModel: UPSTREAM_MODEL },
    },
  };
}

export interface LogLine {
  msg?: string;
  route?: string;
  api?: string;
  model?: string;
  status?: number | string;
  stream?: boolean;
  harness?: {
    forced?: boolean;
    leaks?: unknown;
    final?: string | null;
    retries?: unknown;
    validationFailures?: unknown[];
  };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  /** The `x-request-id` of toolproof's answer, as the agent received it. */
  requestId?: string;
}

export interface AgentStack {
  sim: Simulator;
  app: ToolproofApp;
  /** Where the agent points: toolproof (or the recorder in front of it), without /v1. */
  origin: string;
  model: string;
  /** toolproof's per-request log lines ("request"). */
  requests(): LogLine[];
  recorded: RecordedRequest[];
  close(): Promise<void>;
}

export interface StackOptions {
  mode: Mode;
  task: Task;
  cwd: string;
  /** The scripted model's small window (model.ts). */
  overflowAfterSteps?: number;
  /** The scripted model's window in tokens (model.ts). */
  windowTokens?: number;
  /** The backend fails once (model.ts). */
  failOnce?: { afterSteps: number; kind: 'reset' | '500' };
  /** Whether the backend's model takes images (vLLM refuses an image for a text-only model). Default: it does. */
  vision?: boolean;
  /**
   * The backend as a server (else vLLM with the suite's window): llama-server's personality, its
   * window (n_ctx, reported and refused past with its own 400: simulator/context-window.ts) and
   * what an image costs in it.
   */
  server?: { personality: 'vllm' | 'llama-server'; window: number; imageTokens?: number };
  record?: boolean;
  /** With `record`: stamp a fresh billing nonce on every request, as Claude Code's native builds do. */
  billingNonce?: boolean;
  /** toolproof's YAML config (as an object), given the simulator's URL; the default upstream is the simulator. */
  fileFor?: (upstreamUrl: string) => Parameters<typeof loadConfig>[1];
  /** More of toolproof's environment (tracing's OTEL_* variables). */
  env?: Record<string, string>;
}

/** The simulator alone, for runs straight to the backend. */
export function startBackend(
  options: Omit<StackOptions, 'record' | 'fileFor' | 'billingNonce'>,
): Promise<Simulator> {
  const server = options.server;
  if (server)
    return createSimulator({
      personality: server.personality,
      scenario: agentModel(options),
      modelName: UPSTREAM_MODEL,
      checkModel: true,
      ...(server.personality === 'vllm' ? { maxModelLen: server.window } : { nCtx: server.window }),
      enforceWindow: true,
      ...(server.imageTokens !== undefined ? { imageTokens: server.imageTokens } : {}),
      ...(options.vision !== undefined ? { vision: options.vision } : {}),
      host: '127.0.0.1',
    });
  return createSimulator({
    personality: 'vllm',
    scenario: agentModel(options),
    modelName: UPSTREAM_MODEL,
    // vLLM answers 404 for a model it does not serve: a name nobody mapped shows.
    checkModel: true,
    // The window `toolproof launch` reads and hands the agent: large enough that the suite's short
    // tasks never reach an agent's own auto-compaction (Claude Code's ~20k-token prompt passes 85%
    // of a 32k window after one tool call). Compaction has its own cases (overflowAfterSteps).
    // A case with a small window (windowTokens) has the backend report it, as vLLM's
    // --max-model-len does: the launcher hands that window to the agent.
    maxModelLen: options.windowTokens ?? SUITE_WINDOW,
    ...(options.vision !== undefined ? { vision: options.vision } : {}),
    host: '127.0.0.1',
  });
}

/**
 * Claude Code's native builds stamp a fresh `cch=<nonce>;` onto the billing header of every
 * request (anthropics/claude-code#68900); the npm build the suite runs leaves it out. The recorder
 * adds one, 5 hex digits as those builds send, so the runs carry a nonce that changes per request.
 */
const BILLING_HEADER = /(x-anthropic-billing-header: [^"\\]*?cc_entrypoint=[^;"\\]*;)(?! cch=)/;

export function stampBillingNonce(raw: string): string {
  return raw.replace(BILLING_HEADER, `$1 cch=${randomBytes(3).toString('hex').slice(0, 5)};`);
}

async function recorder(target: string, recorded: RecordedRequest[], billingNonce: boolean): Promise<Server> {
  const forward = forwardTo(target);
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(parts);
      if (billingNonce) {
        raw = Buffer.from(stampBillingNonce(raw.toString('utf8')), 'utf8');
        if (req.headers['content-length']) req.headers['content-length'] = String(raw.length);
      }
      let body: unknown = raw.toString('utf8');
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        // kept as text
      }
      const headers = { ...req.headers };
      for (const secret of ['authorization', 'x-api-key'])
        if (headers[secret]) headers[secret] = '[redacted]';
      const entry: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers, body };
      recorded.push(entry);
      // The id the agent received: forwardTo writes the upstream's headers in one writeHead.
      const writeHead = res.writeHead.bind(res) as (
        status: number,
        headers?: Record<string, unknown>,
      ) => unknown;
      (res as unknown as { writeHead: typeof writeHead }).writeHead = (status, h) => {
        const id = h?.['x-request-id'];
        if (typeof id === 'string') entry.requestId = id;
        return writeHead(status, h);
      };
      forward(req, res, raw);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

export async function startAgentStack(options: StackOptions): Promise<AgentStack> {
  const sim = await startBackend(options);
  const lines: LogLine[] = [];
  let config = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_LOG_LEVEL: 'info', ...options.env },
    options.fileFor?.(sim.url),
  );
  // With a backend as a server: what server/main.ts asks of it before it listens (vision and the
  // window from llama-server's /props), so the model list says what the agent may send.
  if (options.server) config = await askBackends(config);
  const app = await buildApp(config, {
    // Three agent runs a worker at once, on a loaded box: a plugin's start can pass Fastify's 10 s.
    pluginTimeout: 120_000,
    logger: {
      level: 'info',
      stream: {
        write(text: string) {
          for (const line of text.split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
        },
      },
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  let origin = `http://127.0.0.1:${port}`;
  const recorded: RecordedRequest[] = [];
  let rec: Server | undefined;
  if (options.record) {
    rec = await recorder(origin, recorded, options.billingNonce === true);
    origin = `http://127.0.0.1:${(rec.address() as AddressInfo).port}`;
  }
  return {
    sim,
    app,
    origin,
    model: UPSTREAM_MODEL,
    requests: () => lines.filter((l) => l.msg === 'request'),
    recorded,
    async close() {
      if (rec) {
        rec.closeAllConnections();
        await new Promise((r) => rec.close(r));
      }
      // Spans still batched reach the receiver before the app goes.
      await app.toolproof.tracing?.flush();
      await closeApp(app);
      await sim.close();
    },
  };
}
