/** Claude Code (Messages), with the upstream's model name and with its own model names mapped in the YAML. */
import { expect, it, type TaskMeta } from 'vitest';
import { type CaseResult, describeRun, runCase } from './lib/case.js';
import { FULL, longCases } from './lib/long.js';
import { DEFERRED_TASK, RUN_TASK, SUBAGENT_TASK } from './lib/long-tasks.js';
import { MODES, type Mode } from './lib/model.js';
import { checkPrefix } from './lib/prefix.js';
import { CLAUDE_NAMES, claudeNamesConfig, UPSTREAM_MODEL } from './lib/stack.js';
import { agentCases, describeAgents, expectPass, expectPrefix, expectSessions, tag } from './lib/suite.js';
import { CORE_TASK, type Task } from './lib/tasks.js';
import { otlpReceiver } from '../support/otlp-receiver.js';

const NAMES = CLAUDE_NAMES;

describeAgents('Claude Code 2.1.332', () => {
  agentCases({ agent: 'claude', api: 'messages' });
  longCases({ agent: 'claude', api: 'messages' });

  it('proof, prose: its own model names (claude-sonnet-4-5, claude-haiku-4-5) mapped in the YAML config', async () => {
    const r = await runCase({
      agent: 'claude',
      mode: 'prose',
      task: CORE_TASK,
      via: 'toolproof',
      claudeModels: NAMES,
      file: claudeNamesConfig,
    });
    expectPass(r, CORE_TASK, { api: 'messages', model: NAMES.main });
    expectPrefix(r, CORE_TASK, { api: 'messages' });
    // The backend only ever saw the name it serves (it answers 404 for any other).
    const models = new Set(r.upstream.map((u) => (u.body as { model?: string } | undefined)?.model));
    expect([...models]).toEqual([UPSTREAM_MODEL]);
  });
});

describeAgents('Claude Code 2.1.332: compaction after the overflow error', () => {
  // A window too small for the session: after the first tool result the backend answers vLLM's
  // context-overflow 400, toolproof maps it to "prompt is too long" and Claude Code compacts, then
  // finishes from its summary. Every request it sends after that is answered.
  it('proof: the overflow becomes "prompt is too long", Claude Code compacts and finishes', async () => {
    const r = await runCase({
      agent: 'claude',
      mode: 'clean',
      task: CORE_TASK,
      via: 'toolproof',
      model: { overflowAfterSteps: 1 },
    });
    const why = describeRun(r);
    expect(r.run.exitCode, why).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.text, why).toMatch(/\bdone\b/i);
    const statuses = r.logs.map((l) => l.status);
    expect(statuses, why).toContain(400); // the overflow, once
    const overflow = statuses.indexOf(400);
    // After it: the compaction turn and the rest of the session, all answered.
    expect(statuses.slice(overflow + 1).length, why).toBeGreaterThan(0);
    for (const s of statuses.slice(overflow + 1)) expect(s, why).toBe(200);
    const summaries = r.upstream.filter((u) => JSON.stringify(u.body).includes('[steps done: 1]'));
    expect(summaries.length, why).toBeGreaterThan(0);
    // The refused turn and the compaction are the session's too: the inspector shows one session.
    expectSessions(r, { agent: 'claude' });
  });
});

/** Claude Code's own arguments with these tools allowed and more switches. */
function claudeArgs(tools: string, more: string[] = []): (p: string) => string[] {
  return (p) => [
    '-p',
    p,
    '--permission-mode',
    'acceptEdits',
    '--allowedTools',
    tools,
    '--no-session-persistence',
    ...more,
  ];
}

const SUITE = { agent: 'claude' as const, api: 'messages' as const };

/** One run through toolproof with these arguments, tagged for the results: the task done, and (unless `prefix` is false) the prefix held. */
async function runClaude(
  meta: TaskMeta,
  mode: Mode,
  task: Task,
  args: (p: string) => string[],
  options: { tag?: Task; prefix?: boolean } = {},
): Promise<CaseResult> {
  tag(meta, SUITE, options.tag ?? task, mode, 'toolproof');
  const r = await runCase({ agent: 'claude', mode, task, via: 'toolproof', args });
  expectPass(r, task, { api: 'messages' });
  if (options.prefix !== false) expectPrefix(r, task, { api: 'messages' });
  // The sub-agent's conversation too: Claude Code names one session for the run.
  expectSessions(r, SUITE);
  return r;
}

describeAgents('Claude Code 2.1.332: sub-agent, deferred tools and stream-json (issue 31)', () => {
  for (const mode of MODES) {
    const fast = mode === 'leak';
    // The main loop calls its Agent tool; the sub-agent (a conversation of its own, through
    // toolproof too) writes the file and reports back; the main loop answers.
    it.skipIf(!fast && !FULL)(
      `subagent, ${mode}: the Agent tool's sub-agent does the task${fast ? '' : ' (full set)'}`,
      async ({ task: t }) => {
        const r = await runClaude(t.meta, mode, SUBAGENT_TASK, claudeArgs('Write,Read,Edit,Bash,Agent'));
        const why = describeRun(r);
        // Two conversations upstream: the main loop (its Agent call) and the sub-agent's (the write).
        const inner = (SUBAGENT_TASK.steps[0] as { task: { prompt: string } }).task.prompt;
        const convs = checkPrefix(r.upstream).conversations;
        expect(
          convs.some((c) => c.key.includes('SUB-AGENT TASK')),
          why,
        ).toBe(true);
        expect(
          convs.some((c) => c.key.includes(SUBAGENT_TASK.prompt)),
          why,
        ).toBe(true);
        const calls = r.sent.flatMap((s) =>
          ((s.body as { messages?: Array<{ role?: string; content?: unknown }> }).messages ?? []).flatMap(
            (m) =>
              Array.isArray(m.content)
                ? (m.content as Array<{ type?: string; name?: string; input?: { prompt?: string } }>)
                : [],
          ),
        );
        expect(
          calls.some((b) => b.type === 'tool_use' && b.name === 'Agent' && b.input?.prompt === inner),
          why,
        ).toBe(true);
      },
    );
    // A deferred tool: listed by name only, loaded with ToolSearch (a tool_reference block), then
    // called. Upstream, NotebookEdit is declared only once the history loads it.
    it.skipIf(!fast && !FULL)(
      `deferred-tool, ${mode}: ToolSearch loads NotebookEdit, which is then called${fast ? '' : ' (full set)'}`,
      async ({ task: t }) => {
        // The prefix is checked below: one break is expected there.
        const r = await runClaude(
          t.meta,
          mode,
          DEFERRED_TASK,
          claudeArgs('Write,Read,Edit,Bash,ToolSearch,NotebookEdit'),
          { prefix: false },
        );
        const why = describeRun(r);
        // The prefix holds on every turn but the one after the load: toolproof declares a deferred
        // tool upstream once a tool_reference loads it, so the tool list grows by one there.
        const breaks = checkPrefix(r.upstream).breaks;
        expect(breaks.length, why).toBeLessThanOrEqual(1);
        for (const b of breaks) {
          const [, before, after] = /tools changed \((\d+) -> (\d+);/.exec(b) ?? [];
          expect(Number(after) - Number(before), `${why}\n${b}`).toBe(1);
        }
        const declares = r.upstream.map((u) =>
          ((u.body as { tools?: Array<{ function?: { name?: string } }> }).tools ?? []).some(
            (tool) => tool.function?.name === 'NotebookEdit',
          ),
        );
        expect(declares[0], why).toBe(false);
        expect(declares.includes(true), why).toBe(true);
      },
    );
    // --output-format stream-json: every stdout line is an event, the answer is the result event's,
    // and no event carries the leaked markup.
    it.skipIf(!fast && !FULL)(
      `read-edit-run, ${mode}: --output-format stream-json${fast ? '' : ' (full set)'}`,
      async ({ task: t }) => {
        const r = await runClaude(
          t.meta,
          mode,
          RUN_TASK,
          claudeArgs('Write,Read,Edit,Bash', ['--output-format', 'stream-json', '--verbose']),
          { tag: { ...RUN_TASK, id: 'stream-json' } },
        );
        const why = describeRun(r);
        const events = r.run.stdout
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l) as { type?: string; subtype?: string });
        expect(events[0]?.type, why).toBe('system');
        expect(events.at(-1), why).toMatchObject({ type: 'result', subtype: 'success' });
        expect(events.filter((e) => e.type === 'assistant').length, why).toBeGreaterThanOrEqual(
          RUN_TASK.steps.length + 1,
        );
        expect(r.run.stdout, why).not.toMatch(/<\/?tool_call>|final_answer/);
      },
    );
  }
});

describeAgents('Claude Code 2.1.332: its TRACEPARENT continues through toolproof (docs/tracing.md)', () => {
  // Claude Code puts a traceparent on its requests only with its own tracing on (telemetry and the
  // enhanced-telemetry beta) and, to a host not Anthropic's, CLAUDE_CODE_PROPAGATE_TRACEPARENT=1;
  // without them (TRACEPARENT alone) toolproof's spans start traces of their own.
  it("proof: every request span is in the TRACEPARENT trace, a child of Claude Code's llm_request span", async () => {
    const receiver = await otlpReceiver();
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
      const r = await runCase({
        agent: 'claude',
        mode: 'clean',
        task: CORE_TASK,
        via: 'toolproof',
        env: otlp,
        target: {
          env: {
            ...otlp,
            TRACEPARENT: `00-${traceId}-00f067aa0ba902b7-01`,
            CLAUDE_CODE_ENABLE_TELEMETRY: '1',
            CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: '1',
            CLAUDE_CODE_PROPAGATE_TRACEPARENT: '1',
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_METRICS_EXPORTER: 'none',
            OTEL_LOGS_EXPORTER: 'none',
          },
        },
      });
      expectPass(r, CORE_TASK, { api: 'messages' });
      const spans = receiver.spans;
      const why = `${describeRun(r)}\nspans: ${spans.map((x) => `${x.kind} ${x.name} ${x.traceId}/${x.spanId}<${x.parentSpanId}`).join(' | ')}`;
      const posts = r.sent.filter((s) => s.method === 'POST');
      // What Claude Code sent: its trace, a span of its own per request.
      const parents = posts.map((s) =>
        /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(s.headers.traceparent)),
      );
      for (const m of parents) expect(m?.[1], why).toBe(traceId);
      const requests = spans.filter((x) => x.kind === 2 && x.name === 'POST /v1/messages');
      expect(requests.length, why).toBe(posts.length);
      for (const span of requests) {
        expect(span.traceId, why).toBe(traceId);
        expect(
          parents.map((m) => m?.[2]),
          why,
        ).toContain(span.parentSpanId);
        const attempts = spans.filter((x) => x.kind === 3 && x.parentSpanId === span.spanId);
        expect(attempts.length, why).toBeGreaterThan(0);
        for (const a of attempts) expect(a.traceId, why).toBe(traceId);
      }
      // Those parents are Claude Code's own llm_request spans, in the trace it exported. Claude
      // Code exports them as it exits, best effort: when none arrived, the checks above (its
      // headers' span ids are the server spans' parents) already prove the chain, which is
      // toolproof's part.
      const llm = new Set(spans.filter((x) => x.name === 'claude_code.llm_request').map((x) => x.spanId));
      if (llm.size > 0) for (const span of requests) expect(llm.has(span.parentSpanId), why).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
