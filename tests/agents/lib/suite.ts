/**
 * The assertions every agent case makes, and the per-agent suites built from them.
 */
import { appendFileSync } from 'node:fs';
import { describe, expect, it, type TaskMeta } from 'vitest';
import './results-reporter.js';
import type { AgentId, PiApi } from './agents.js';
import { agentsInfo, type CaseOptions, type CaseResult, describeRun, MARKUP, runCase } from './case.js';
import type { RecordedRequest as AgentRequest } from './stack.js';
import { MODES, type Mode } from './model.js';
import { checkPrefix, systemMessage } from './prefix.js';
import { UPSTREAM_MODEL } from './stack.js';
import { CORE_TASK, EDIT_TASK, type Task } from './tasks.js';

export type Api = 'chat' | 'responses' | 'messages';

/** Skips loudly when the CLIs are absent (never in CI: setup.ts fails there instead). */
export function describeAgents(name: string, body: () => void): void {
  const info = agentsInfo();
  if (info.missing) {
    describe.skip(`${name} (SKIPPED: ${info.missing})`, body);
    return;
  }
  describe.concurrent(name, body);
}

export interface Expect {
  api: Api;
  /** The model name the agent sends (toolproof's log names it). */
  model?: string;
  /** Whether it streams (every agent does, but Grok CLI headless). */
  stream?: boolean;
}

/** Through toolproof: the task is done, exit 0, a clean final text, and toolproof's log says so. */
export function expectPass(r: CaseResult, task: Task, e: Expect): void {
  const why = describeRun(r);
  expect(r.run.exitCode, why).toBe(0);
  expect(r.disk, why).toEqual([]);
  expect(r.text, why).toMatch(new RegExp(`\\b${task.final}\\b`, 'i'));
  expect(r.text, why).not.toMatch(MARKUP);
  const lines = r.logs.filter((l) => l.api === e.api);
  expect(lines.length, why).toBeGreaterThan(0);
  for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
  for (const line of lines) {
    expect(line.model, why).toBe(e.model ?? UPSTREAM_MODEL);
    expect(line.stream, why).toBe(e.stream ?? true);
    expect(line.harness, why).toBeDefined();
  }
  // One forced request per step, and one more for the answer: toolproof drove every turn.
  const forced = lines.filter((l) => l.harness?.forced === true);
  expect(forced.length, why).toBeGreaterThanOrEqual(task.steps.length + 1);
}

const BILLING = 'x-anthropic-billing-header:';

/** The text blocks of a Messages request's `system` (a string or blocks). */
function systemTexts(body: unknown): string[] {
  const system = (body as { system?: unknown } | undefined)?.system;
  if (typeof system === 'string') return [system];
  if (!Array.isArray(system)) return [];
  return system.flatMap((b: { type?: string; text?: unknown }) =>
    b?.type === 'text' && typeof b.text === 'string' ? [b.text] : [],
  );
}

/**
 * The prefix contract over the run's main loop (docs/prefix.md): every turn's upstream request
 * extends the previous one byte for byte, corrective retries aside (each one matched by a retry
 * in toolproof's log). On Messages, the system text (Claude Code's billing header and its nonce
 * included) is the same on every turn upstream.
 */
export function expectPrefix(r: CaseResult, task: Task, e: Expect): void {
  const why = describeRun(r);
  const check = checkPrefix(r.upstream);
  const main = [...check.conversations].sort((a, b) => b.requests.length - a.requests.length)[0];
  const turns = main?.requests.length ?? 0;
  const logged = r.logs.reduce(
    (n, l) => n + (Array.isArray(l.harness?.retries) ? (l.harness.retries as unknown[]).length : 0),
    0,
  );
  const billing = r.sent.flatMap((s) => systemTexts(s.body)).filter((t) => t.startsWith(BILLING));
  const nonces = new Set(billing.map((t) => /cch=([0-9A-Za-z]+)/.exec(t)?.[1]).filter(Boolean));
  const systems = new Set(
    (main?.requests ?? []).map((u) => systemMessage(u.rawBody)).filter((s) => s !== undefined),
  );
  const log = process.env.TOOLPROOF_AGENTS_PREFIX_LOG;
  if (log)
    appendFileSync(
      log,
      `${JSON.stringify({
        api: e.api,
        task: task.id,
        conversations: check.conversations.map((c) => c.requests.length),
        checked: check.checked,
        retries: check.retries,
        logged,
        breaks: check.breaks.length,
        billing: billing.length,
        nonces: nonces.size,
        systems: systems.size,
        cached: (main?.requests ?? []).map((u) => `${u.cachedTokens ?? '-'}/${u.promptTokens ?? '-'}`),
      })}\n`,
    );
  // Every step is one turn of the main loop, and the answer one more.
  expect(turns, why).toBeGreaterThanOrEqual(task.steps.length + 1);
  expect(check.breaks, why).toEqual([]);
  expect(check.retries, why).toBeLessThanOrEqual(logged);
  if (e.api === 'messages') expect(systems.size, why).toBe(1);
  if (billing.length > 0) {
    // The agent's header reached upstream with its nonce normalized, the same on every turn.
    const [system] = [...systems];
    expect(system, why).toContain(BILLING.slice(0, -1));
    if (nonces.size > 0) expect(system, why).toMatch(/cch=0+;/);
    // ...though the agent sent a fresh one on every request.
    if (billing.length > 1 && nonces.size > 0) expect(nonces.size, why).toBeGreaterThan(1);
  }
}

function header(s: AgentRequest, name: string): string | undefined {
  const v = s.headers[name];
  return typeof v === 'string' && v ? v : undefined;
}

/**
 * The session id each agent sends, read from its request as it sent it, as the inspector labels
 * it (docs/affinity.md): `h:` a header, `p:` the body's `prompt_cache_key`, `u:` its
 * `metadata.user_id`. `undefined` for an agent that names none: its session is the hash of its
 * opening messages (`o:`) and the run's mark (the model's first reply), so two runs that open
 * alike are two sessions.
 */
const OWN_SESSION: Partial<Record<AgentId, (s: AgentRequest) => string | undefined>> = {
  claude: (s) => prefixed('h:', header(s, 'x-claude-code-session-id')),
  'claude-agent-sdk': (s) => prefixed('h:', header(s, 'x-claude-code-session-id')),
  // Its `session-id` header (0.171; older releases sent `session_id`) is the same id.
  codex: (s) => prefixed('p:', (s.body as { prompt_cache_key?: string } | undefined)?.prompt_cache_key),
  opencode: (s) => prefixed('h:', header(s, 'x-session-affinity')),
  kilo: (s) => prefixed('h:', header(s, 'x-session-affinity')),
  // The header the launcher's settings add, Qwen Code's session id filled in.
  qwen: (s) => prefixed('h:', header(s, 'x-session-affinity')),
  // `session_id` on chat completions (the launcher turns on its affinity headers) and Responses;
  // on Messages the launcher's extension puts it in `metadata.user_id`.
  pi: (s) =>
    prefixed('h:', header(s, 'session_id')) ??
    prefixed('u:', (s.body as { metadata?: { user_id?: string } } | undefined)?.metadata?.user_id),
};

function prefixed(prefix: string, v: string | undefined): string | undefined {
  return v ? `${prefix}${v}` : undefined;
}

/** The sessions named so far in this file (one worker runs a file): a run's own must be new. */
const seenSessions = new Set<string>();

/**
 * What a user of the inspector sees of the run (docs/inspect.md): every request the agent sent
 * in ONE session, listed whole by `/inspect/api/sessions`, the session view and the session
 * filter; where the agent names its session, the session is its own id; where it names none,
 * the hash of its opening messages and the run's mark; and no other run of this file (the same
 * task in another mode, another task) landed in it. A resumed run goes on in
 * its first run's session when the agent names its sessions (each keeps its id on resume); one
 * keyed by its opening messages is checked run by run (Qwen Code's resumed opening lists the
 * working directory anew: a session of its own).
 */
export function expectSessions(r: CaseResult, suite: Pick<AgentSuite, 'agent'>): void {
  const why = `${describeRun(r)}\ninspector: ${JSON.stringify(r.inspect?.sessions)}`;
  const view = r.inspect;
  expect(view, why).toBeDefined();
  if (!view) return;
  const posts = r.sent.filter((s) => s.method === 'POST');
  expect(view.requests.length, why).toBe(posts.length);
  const own = OWN_SESSION[suite.agent];
  const named = own ? [...new Set(posts.map(own))] : [];
  if (own)
    expect(
      named.every((n) => n !== undefined),
      `${why}\nown ids: ${named}`,
    ).toBe(true);
  const runs = view.firstIds
    ? [
        view.requests.filter((q) => view.firstIds?.includes(q.id)),
        view.requests.filter((q) => !view.firstIds?.includes(q.id)),
      ]
    : [view.requests];
  const sessions: string[] = [];
  for (const requests of runs) {
    const ids = requests.map((q) => q.id);
    const labels = [...new Set(requests.map((q) => q.session))];
    expect(labels, why).toHaveLength(1);
    const [session = ''] = labels;
    if (own) expect(named, why).toContain(session);
    // The hash of its opening messages, then the run's mark (docs/inspect.md, "Sessions").
    else expect(session, why).toMatch(/^o:.*\/[0-9a-f]{8}$/);
    // The session view and the filter list the run's requests, in order.
    expect(
      view.turns[session]?.filter((id) => ids.includes(id)),
      why,
    ).toEqual(ids);
    expect(
      view.filtered[session]?.filter((id) => ids.includes(id)),
      why,
    ).toEqual(ids);
    sessions.push(session);
  }
  const unique = [...new Set(sessions)];
  // A resumed conversation goes on in its session: every agent that names one keeps its id.
  if (own && view.firstIds)
    expect(unique, `${why}\na resumed run opened a session of its own`).toHaveLength(1);
  expect(view.sessions.map((s) => s.session).sort(), why).toEqual(unique.sort());
  for (const s of view.sessions)
    expect(s.requests, why).toBe(view.requests.filter((q) => q.session === s.session).length);
  // No other run of this file landed in its session, named or not: runs that open alike (the
  // same task in another mode) are told apart by the model's first reply.
  for (const s of unique) {
    expect(seenSessions.has(s), `${why}\n${s} was another run's session`).toBe(false);
    seenSessions.add(s);
  }
}

/** Straight to the backend: a leak or a prose claim reaches the user, and nothing is on disk. */
export function expectDirectFailure(r: CaseResult, mode: Mode): void {
  const why = describeRun(r);
  expect(r.disk, why).not.toEqual([]);
  if (mode === 'leak') expect(r.text, why).toContain('<tool_call>');
  if (mode === 'prose') expect(r.text, why).toMatch(/I have created proof\.txt/);
}

export interface AgentSuite {
  agent: AgentId;
  api: Api;
  piApi?: PiApi;
  /** Speaks chat completions: the same runs straight to the backend are checked too. */
  direct?: boolean;
  tasks?: Task[];
  extra?: Partial<CaseOptions>;
  /** More to assert on every run through toolproof. */
  check?: (r: CaseResult) => void;
  /** It sends `stream: false` (Grok CLI headless); else every request streams. */
  noStream?: boolean;
  /** Its version, for one the agents cache does not hold (the OpenAI Agents SDK, a devDependency). */
  version?: string;
  /** One of several runs on the same API (an SDK not streamed): the results name the task `id (variant)`, in the API's row. */
  variant?: string;
}

const NAMES: Record<string, string> = {
  claude: 'Claude Code',
  codex: 'Codex',
  opencode: 'opencode',
  qwen: 'Qwen Code',
  pi: 'pi',
  cn: 'Continue CLI',
  kilo: 'Kilo CLI',
  grok: 'Grok CLI',
  cline: 'Cline',
  'claude-agent-sdk': 'Claude Agent SDK',
  'openai-agents': 'OpenAI Agents SDK',
};

/** Tags a case for the results reporter (tests/agents/lib/results-reporter.ts); long.ts tags its cases too. */
export function tag(
  meta: TaskMeta,
  suite: AgentSuite,
  task: Task,
  mode: Mode,
  via: 'toolproof' | 'direct',
): void {
  const version = agentsInfo().versions?.[suite.agent] ?? suite.version;
  const label = `${NAMES[suite.agent] ?? suite.agent}${version ? ` ${version}` : ''}`;
  const id = suite.variant ? `${task.id} (${suite.variant})` : task.id;
  meta.agentCase = { agent: suite.agent, label, api: suite.api, task: id, mode, via };
}

/** Tags a real-content case (tests/agents/real-content.test.ts): its own column in the table. */
export function tagContent(meta: TaskMeta, agent: AgentId, api: Api, task: string, content: string): void {
  const version = agentsInfo().versions?.[agent];
  const label = `${NAMES[agent] ?? agent}${version ? ` ${version}` : ''}`;
  meta.agentCase = { agent, label, api, task, mode: 'clean', via: 'toolproof', content };
}

/** Every mode, every task, through toolproof; and the harness effect where the agent can go direct. */
export function agentCases(suite: AgentSuite): void {
  const base = { agent: suite.agent, ...(suite.piApi ? { piApi: suite.piApi } : {}), ...suite.extra };
  for (const task of suite.tasks ?? [CORE_TASK, EDIT_TASK]) {
    for (const mode of MODES) {
      it(`${task.id}, ${mode}: through toolproof it does the task`, async ({ task: t }) => {
        tag(t.meta, suite, task, mode, 'toolproof');
        const r = await runCase({ ...base, mode, task, via: 'toolproof' });
        expectPass(r, task, { api: suite.api, ...(suite.noStream ? { stream: false } : {}) });
        expectPrefix(r, task, { api: suite.api });
        expectSessions(r, suite);
        suite.check?.(r);
      });
    }
  }
  const tasks = suite.tasks ?? [CORE_TASK, EDIT_TASK];
  // Forcing off: the leaked calls reach the client only through leak recovery.
  if (tasks.includes(CORE_TASK))
    it('proof, leak, forceToolUse off: leak recovery alone does the task', async () => {
      const r = await runCase({
        ...base,
        mode: 'leak',
        task: CORE_TASK,
        via: 'toolproof',
        file: () => ({ defaults: { forceToolUse: false } }),
      });
      const why = describeRun(r);
      expect(r.run.exitCode, why).toBe(0);
      expect(r.disk, why).toEqual([]);
      expect(r.text, why).not.toMatch(MARKUP);
      const lines = r.logs.filter((l) => l.api === suite.api && l.harness);
      expect(
        lines.every((l) => l.harness?.forced === false),
        why,
      ).toBe(true);
      const leaks = lines.flatMap(
        (l) => (l.harness?.leaks ?? []) as Array<{ format: string; outcome: string }>,
      );
      expect(leaks, why).toContainEqual(expect.objectContaining({ outcome: 'recovered' }));
      expectPrefix(r, CORE_TASK, { api: suite.api });
      expectSessions(r, suite);
    });
  if (!suite.direct) return;
  for (const mode of MODES) {
    it(`proof, ${mode}: straight to the backend ${mode === 'clean' ? 'it works too' : 'it fails'}`, async ({
      task: t,
    }) => {
      tag(t.meta, suite, CORE_TASK, mode, 'direct');
      const r = await runCase({ ...base, mode, task: CORE_TASK, via: 'direct' });
      if (mode === 'clean') {
        expect(r.run.exitCode, describeRun(r)).toBe(0);
        expect(r.disk, describeRun(r)).toEqual([]);
      } else {
        expectDirectFailure(r, mode);
      }
    });
  }
}
