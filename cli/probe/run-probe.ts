/**
 * runProbe: the controlled experiment (memorizable / unmemorizable questions × tool_choice
 * auto / required, N runs each) plus the conformance checks, against any OpenAI-compatible
 * endpoint. Orchestration only: requests come from prompts.ts, classification from
 * classify.ts, findings from conformance.ts and verdict.ts.
 */
import { randomBytes } from 'node:crypto';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { classifyResponse, countKinds, describeClassification, identifyBackend } from './classify.js';
import { evaluateChecks } from './conformance.js';
import { detectLeak, type LeakDetector } from './detect.js';
import { type ChatOutcome, createChatClient, truncate } from './http.js';
import { runPool } from './pool.js';
import {
  declaredTools,
  experimentRequest,
  GET_WEATHER,
  type HistoryVariant,
  historyRequest,
  namedChoiceRequest,
  parallelRequest,
  RUN_PYTHON,
  type RequestTuning,
  requiredCheckRequest,
} from './prompts.js';
import {
  type Cell,
  CHOICE_MODES,
  type ChoiceMode,
  type Classification,
  type ClassificationKind,
  type ProbeReport,
  type Question,
  QUESTIONS,
} from './types.js';
import { decideVerdicts, recommendSettings, summarizeLeaks } from './verdict.js';

export const PROBE_DEFAULTS = Object.freeze({
  runs: 5,
  concurrency: 4,
  timeoutMs: 120_000,
  maxTokens: 512,
  temperature: 0.7,
});

export type ProgressEvent =
  | { type: 'start'; total: number }
  | {
      type: 'result';
      done: number;
      total: number;
      label: string;
      /** One short phrase: "tool call (run_python)", "leaked hermes", "rejected (HTTP 400: ...)". */
      summary: string;
      /** Set for the 2x2 experiment's requests, which the progress line tallies. */
      kind?: ClassificationKind;
    };

export interface ProbeOptions {
  /** Base URL including /v1. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  runs?: number;
  concurrency?: number;
  timeoutMs?: number;
  maxTokens?: number;
  temperature?: number;
  /** Skip the conformance checks (the 2x2 experiment only). */
  skipChecks?: boolean;
  headers?: Record<string, string>;
  /** The random string hashed in the unmemorizable question; must differ per run. */
  randomString?: () => string;
  detect?: LeakDetector;
  onProgress?: (event: ProgressEvent) => void;
}

const HISTORY_VARIANTS: readonly HistoryVariant[] = [
  'control',
  'unanswered-call',
  'malformed-arguments',
  'non-nine-char-id',
  'user-after-tool',
];

function defaultRandomString(): string {
  // base64url of 12 bytes = 16 characters nobody has published a hash of.
  return randomBytes(12).toString('base64url');
}

type TaskResult = { type: 'classified'; result: Classification } | { type: 'raw'; outcome: ChatOutcome };

interface Task {
  label: string;
  experiment: boolean;
  run: () => Promise<TaskResult>;
}

function summarize(result: TaskResult): string {
  if (result.type === 'classified') return describeClassification(result.result);
  const { outcome } = result;
  if (outcome.ok) return `accepted (HTTP ${outcome.status})`;
  const message = truncate(outcome.message, 100);
  return outcome.status === null ? `failed: ${message}` : `rejected (HTTP ${outcome.status}: ${message})`;
}

export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const runs = options.runs ?? PROBE_DEFAULTS.runs;
  if (!Number.isInteger(runs) || runs < 1)
    throw new RangeError(`runs must be a positive integer, got ${runs}`);
  const tuning: RequestTuning = {
    model: options.model,
    maxTokens: options.maxTokens ?? PROBE_DEFAULTS.maxTokens,
    temperature: options.temperature ?? PROBE_DEFAULTS.temperature,
  };
  const detect = options.detect ?? detectLeak;
  const randomString = options.randomString ?? defaultRandomString;
  const client = createChatClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs ?? PROBE_DEFAULTS.timeoutMs,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  const experimentTools = declaredTools([RUN_PYTHON]);
  const checkTools = declaredTools([RUN_PYTHON, GET_WEATHER]);
  const classified =
    (body: ChatCompletionRequest, tools: typeof checkTools) => async (): Promise<TaskResult> => ({
      type: 'classified',
      result: classifyResponse(await client.send(body), tools, detect),
    });

  const started = performance.now();
  const tasks: Task[] = [];
  const cellKeys: Array<{ question: Question; toolChoice: ChoiceMode }> = [];
  for (const question of QUESTIONS) {
    for (const toolChoice of CHOICE_MODES) {
      cellKeys.push({ question, toolChoice });
      for (let run = 0; run < runs; run++) {
        const body = experimentRequest(tuning, question, toolChoice, run, randomString());
        tasks.push({
          label: `${question}/${toolChoice} #${run + 1}`,
          experiment: true,
          run: classified(body, experimentTools),
        });
      }
    }
  }
  const checkStart = tasks.length;
  if (!options.skipChecks) {
    tasks.push(
      {
        label: 'check required',
        experiment: false,
        run: classified(requiredCheckRequest(tuning), checkTools),
      },
      {
        label: 'check named tool_choice',
        experiment: false,
        run: classified(namedChoiceRequest(tuning), checkTools),
      },
      {
        label: 'check parallel calls',
        experiment: false,
        run: classified(parallelRequest(tuning), checkTools),
      },
    );
    for (const variant of HISTORY_VARIANTS) {
      const body = historyRequest(tuning, variant);
      tasks.push({
        label: `check history ${variant}`,
        experiment: false,
        run: async () => ({ type: 'raw', outcome: await client.send(body) }),
      });
    }
  }

  const total = tasks.length;
  let done = 0;
  options.onProgress?.({ type: 'start', total });
  let results: TaskResult[];
  let backend: ProbeReport['backend'];
  try {
    const models = client.get('/models');
    results = await runPool(
      tasks.map((task) => async () => {
        const result = await task.run();
        done++;
        options.onProgress?.({
          type: 'result',
          done,
          total,
          label: task.label,
          summary: summarize(result),
          ...(task.experiment && result.type === 'classified' ? { kind: result.result.kind } : {}),
        });
        return result;
      }),
      options.concurrency ?? PROBE_DEFAULTS.concurrency,
    );
    backend = identifyBackend(await models, client.sawToolproof());
  } finally {
    await client.close();
  }

  const classification = (i: number): Classification => {
    const result = results[i];
    if (result?.type === 'classified') return result.result;
    return { kind: 'error', status: null, message: 'missing result' };
  };
  const outcome = (i: number): ChatOutcome => {
    const result = results[i];
    if (result?.type === 'raw') return result.outcome;
    return { ok: false, status: null, message: 'missing result' };
  };

  const cells: Cell[] = cellKeys.map((key, c) => {
    const cellResults = Array.from({ length: runs }, (_, r) => classification(c * runs + r));
    return { ...key, counts: countKinds(cellResults), results: cellResults };
  });
  const checks = options.skipChecks
    ? []
    : evaluateChecks({
        required: classification(checkStart),
        named: classification(checkStart + 1),
        parallel: classification(checkStart + 2),
        history: Object.fromEntries(
          HISTORY_VARIANTS.map((variant, i) => [variant, outcome(checkStart + 3 + i)]),
        ) as Record<HistoryVariant, ChatOutcome>,
      });
  const leakFormats = summarizeLeaks(cells);
  return {
    version: 1,
    baseUrl: options.baseUrl,
    model: options.model,
    backend,
    runs,
    durationMs: Math.round(performance.now() - started),
    cells,
    leakFormats,
    checks,
    verdicts: decideVerdicts(cells, leakFormats, checks, backend, options.apiKey !== undefined),
    settings: recommendSettings(cells, checks),
  };
}
