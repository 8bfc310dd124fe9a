/**
 * One case of the agent suite: an agent CLI, a task, a habit of the scripted model, and where the
 * agent's requests go (through toolproof, or straight to the backend). Starts the servers, runs
 * the agent in a fresh HOME and working directory, and returns everything a test asserts on.
 */
import { rmSync } from 'node:fs';
import { inject } from 'vitest';
import type { loadConfig } from '../../../server/config.js';
import type { RecordedRequest } from '../../../simulator/index.js';
import {
  type AgentId,
  type AgentRun,
  type AgentTarget,
  makeRunDirs,
  type PiApi,
  runAgent,
} from './agents.js';
import type { Mode } from './model.js';
import { SUITE_KEY } from './plan.js';
import {
  type AgentStack,
  type LogLine,
  type RecordedRequest as AgentRequest,
  startAgentStack,
  startBackend,
  UPSTREAM_MODEL,
} from './stack.js';
import { diskProblems, type Task, taskPrompt } from './tasks.js';

export interface AgentsInfo {
  dir?: string;
  bins?: Record<AgentId, string>;
  versions?: Record<AgentId, string>;
  /** Why the CLIs cannot run (only ever set outside CI). */
  missing?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    agents: AgentsInfo;
  }
}

export function agentsInfo(): AgentsInfo {
  return inject('agents');
}

export interface CaseOptions {
  agent: AgentId;
  mode: Mode;
  task: Task;
  via: 'toolproof' | 'direct';
  piApi?: PiApi;
  /** Claude Code: the model names it sends, mapped onto the upstream's model by `file`. */
  claudeModels?: { main: string; small: string };
  /** More of the agent's settings (Codex's catalog). */
  target?: Partial<AgentTarget>;
  /** More of the scripted model's habits (a small window: overflowAfterSteps). */
  model?: {
    overflowAfterSteps?: number;
    windowTokens?: number;
    vision?: boolean;
    failOnce?: { afterSteps: number; kind: 'reset' | '500' };
    server?: { personality: 'vllm' | 'llama-server'; window: number; imageTokens?: number };
  };
  /** toolproof's YAML config, given the simulator's URL. */
  file?: (upstreamUrl: string) => Parameters<typeof loadConfig>[1];
  /** More of toolproof's environment (tracing's OTEL_* variables). */
  env?: Record<string, string>;
  timeoutMs?: number;
  /** The agent's own arguments (after `toolproof launch <agent> --`), given the prompt; else HEADLESS's. */
  args?: (prompt: string) => string[];
  /**
   * A second run in the same HOME and working directory, with the task's resume prompt and these
   * arguments (the agent's resume switch): the result's `run` is that one, `first` the first.
   */
  resumeArgs?: (prompt: string) => string[];
  /**
   * Through toolproof: runs once its servers are up, before the agent starts, given toolproof's
   * own origin (not the recorder's): another client's requests (lib/hold.ts). Not awaited past
   * its own start: what it begins runs beside the agent.
   */
  beforeRun?: (toolproofOrigin: string) => void | Promise<void>;
  /**
   * Through toolproof: runs once the agent has exited, before the servers close, given
   * toolproof's own origin: what a user looks at afterwards (the inspector's page).
   */
  afterRun?: (toolproofOrigin: string) => Promise<void>;
}

export interface CaseResult {
  run: AgentRun;
  /** toolproof's request log lines (empty for a direct run). */
  logs: LogLine[];
  /** What the agent sent toolproof (empty for a direct run). */
  sent: AgentRequest[];
  /** What reached the backend. */
  upstream: RecordedRequest[];
  /** Files that are not what the task expects ([] when the effect on disk is right). */
  disk: string[];
  /** The agent's final text (stdout, trimmed). */
  text: string;
  /** With resumeArgs: the first run (`run` is the resumed one). */
  first?: AgentRun;
  /** What the inspector showed for the run, read before the servers closed (through toolproof only). */
  inspect?: InspectView;
}

/** A request as the inspector lists it (`GET /inspect/api/requests`), the fields the suite reads. */
export interface InspectSummary {
  id: string;
  session: string;
  api: string;
}

/** What a user of the inspector sees of one run (docs/inspect.md, "The API"). */
export interface InspectView {
  /** Every request captured, oldest first. */
  requests: InspectSummary[];
  /** `GET /inspect/api/sessions`. */
  sessions: Array<{ session: string; requests: number }>;
  /** Per session: the ids of its turns, as `GET /inspect/api/session?key=` lists them (oldest first). */
  turns: Record<string, string[]>;
  /** Per session: the ids `GET /inspect/api/requests?session=` lists (oldest first). */
  filtered: Record<string, string[]>;
  /** With resumeArgs: the ids of the first run's requests. */
  firstIds?: string[];
}

/** Reads the inspector's API the way its page does, through the app (no key is configured). */
async function readInspector(app: AgentStack['app']): Promise<Omit<InspectView, 'firstIds'>> {
  const get = async <T>(url: string): Promise<T> => {
    // The suite's key: a case that configures keys (lib/hold.ts) still reads what its agent sent.
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${SUITE_KEY}` } });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    return res.json() as T;
  };
  const { requests } = await get<{ requests: InspectSummary[] }>('/inspect/api/requests?limit=1000');
  const { sessions } = await get<{ sessions: InspectView['sessions'] }>('/inspect/api/sessions');
  const turns: Record<string, string[]> = {};
  const filtered: Record<string, string[]> = {};
  for (const s of sessions) {
    const key = encodeURIComponent(s.session);
    const view = await get<{ turns: Array<{ summary: { id: string } }> }>(`/inspect/api/session?key=${key}`);
    turns[s.session] = view.turns.map((t) => t.summary.id);
    const list = await get<{ requests: InspectSummary[] }>(`/inspect/api/requests?session=${key}&limit=1000`);
    filtered[s.session] = list.requests.map((q) => q.id).reverse();
  }
  return { requests: requests.slice().reverse(), sessions, turns, filtered };
}

export async function runCase(options: CaseOptions): Promise<CaseResult> {
  // The OpenAI Agents SDK is a devDependency: its program runs on this node.
  const bin =
    agentsInfo().bins?.[options.agent] ?? (options.agent === 'openai-agents' ? process.execPath : undefined);
  if (!bin) throw new Error(`${options.agent}: not installed`);
  const dirs = makeRunDirs(options.agent);
  const model = { mode: options.mode, task: options.task, cwd: dirs.cwd, ...options.model };
  const servers: Pick<AgentStack, 'sim' | 'origin' | 'requests' | 'recorded' | 'close'> & {
    app?: AgentStack['app'];
  } =
    options.via === 'toolproof'
      ? await startAgentStack({
          ...model,
          record: true,
          billingNonce: options.agent === 'claude',
          ...(options.file ? { fileFor: options.file } : {}),
          ...(options.env ? { env: options.env } : {}),
        })
      : await startBackend(model).then((sim) => ({
          sim,
          origin: sim.origin,
          requests: (): LogLine[] => [],
          recorded: [] as AgentRequest[],
          close: () => sim.close(),
        }));
  try {
    const runOnce = (prompt: string, args: ((p: string) => string[]) | undefined, files: boolean) =>
      runAgent({
        bin,
        agent: options.agent,
        via: options.via,
        target: {
          origin: servers.origin,
          model: UPSTREAM_MODEL,
          ...(options.piApi ? { piApi: options.piApi } : {}),
          ...(options.claudeModels ? { claudeModels: options.claudeModels } : {}),
          ...options.target,
        },
        task: prompt,
        dirs,
        files: files ? options.task.files : {},
        timeoutMs: options.timeoutMs ?? 150_000,
        ...(args ? { args: args(prompt) } : {}),
      });
    const app = servers.app;
    if (app && options.beforeRun) {
      const port = (app.server.address() as import('node:net').AddressInfo).port;
      await options.beforeRun(`http://127.0.0.1:${port}`);
    }
    let first: AgentRun | undefined;
    let firstIds: string[] | undefined;
    let run = await runOnce(taskPrompt(options.task), options.args, true);
    const resume = options.task.resume;
    if (options.resumeArgs && resume) {
      first = run;
      if (app) firstIds = (await readInspector(app)).requests.map((q) => q.id);
      run = first.exitCode === 0 ? await runOnce(resume.prompt, options.resumeArgs, false) : first;
    }
    const inspect = app ? { ...(await readInspector(app)), ...(firstIds ? { firstIds } : {}) } : undefined;
    if (app && options.afterRun) {
      const port = (app.server.address() as import('node:net').AddressInfo).port;
      await options.afterRun(`http://127.0.0.1:${port}`);
    }
    return {
      ...(first ? { first } : {}),
      ...(inspect ? { inspect } : {}),
      run,
      logs: servers.requests(),
      // The launcher's own look-ups (GET /v1/models, the backend's window, HEAD /api/hello: is it
      // toolproof) are not the agent's session.
      sent: servers.recorded.filter((s) => s.method !== 'GET' && s.method !== 'HEAD'),
      upstream: servers.sim.requests.filter((u) => u.method !== 'GET'),
      disk: diskProblems(options.task, dirs.cwd),
      text: finalText(options.agent, run.stdout),
    };
  } finally {
    await servers.close();
    // The run's HOME and working directory go (opencode leaves ~13 MB); TOOLPROOF_AGENTS_KEEP=1 keeps them.
    if (!process.env.TOOLPROOF_AGENTS_KEEP) {
      for (const dir of [dirs.home, dirs.cwd]) rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * The agent's final text: its stdout, trimmed; Grok CLI headless prints the conversation as JSON
 * lines, and its answer is the last assistant message's content.
 */
export function finalText(agent: AgentId, stdout: string): string {
  // Claude Code's `--output-format stream-json`: one JSON event a line, the answer in the `result` event.
  if (agent === 'claude' && stdout.trimStart().startsWith('{')) {
    for (const line of stdout.split('\n').reverse()) {
      try {
        const event = JSON.parse(line) as { type?: string; result?: unknown };
        if (event.type === 'result' && typeof event.result === 'string') return event.result.trim();
      } catch {
        // not an event line
      }
    }
  }
  if (agent !== 'grok') return stdout.trim();
  let text = '';
  for (const line of stdout.split('\n')) {
    try {
      const m = JSON.parse(line) as { role?: string; content?: unknown };
      if (m.role === 'assistant' && typeof m.content === 'string') text = m.content;
    } catch {
      // not a message line
    }
  }
  return text.trim();
}

/** A readable account of a run, for assertion messages. */
export function describeRun(result: CaseResult): string {
  const { run } = result;
  return [
    `exit ${run.exitCode ?? run.signal} after ${run.ms} ms in ${run.cwd} (removed unless TOOLPROOF_AGENTS_KEEP=1)`,
    `disk: ${result.disk.join('; ') || 'ok'}`,
    `stdout: ${run.stdout.slice(-800)}`,
    `stderr: ${run.stderr.slice(-1500)}`,
    `toolproof: ${result.logs
      .map((l) => `${l.api} ${l.model} ${l.status}${l.error ? ` ${JSON.stringify(l.error)}` : ''}`)
      .join(' | ')}`,
  ].join('\n');
}

/** Markup a final answer must not show: tool-call tags, the synthetic tool, raw call JSON. */
export const MARKUP = /<\/?tool_call>|<function=|\[TOOL_CALLS\]|final_answer|"arguments"\s*:/;
