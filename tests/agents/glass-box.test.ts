/**
 * The glass box as its users use it (issue 28): a real agent CLI through toolproof with capture on
 * and tracing to a loopback OTLP/HTTP receiver, on a model that leaks its call as text. For each
 * agent: its turns are ONE session, in the page and in `/inspect/api/requests?session=`; each
 * turn shows what the model wrote beside what the client received (the leaked call marked); the
 * spans nest each attempt under its request's server span (Claude Code's under its own trace, from
 * TRACEPARENT), each with the agent's session as its `gen_ai.conversation.id`; and the
 * `x-request-id` the agent received finds the request in the page (its
 * request-id field), the log line and the span. Screenshots go to tests/artifacts/inspect/agents/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { otlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import type { AgentId } from './lib/agents.js';
import { type CaseResult, describeRun, runCase } from './lib/case.js';
import { describeAgents, expectSessions } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect', 'agents');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

interface Turn {
  id: string;
  /** What the page showed of it. */
  wrote: string;
  marked: string[];
  received: string;
  calls: string[];
}

const AGENTS: Array<{ agent: AgentId; api: 'chat' | 'responses' | 'messages'; server: string }> = [
  { agent: 'claude', api: 'messages', server: 'POST /v1/messages' },
  { agent: 'codex', api: 'responses', server: 'POST /v1/responses' },
  { agent: 'opencode', api: 'chat', server: 'POST /v1/chat/completions' },
  { agent: 'qwen', api: 'chat', server: 'POST /v1/chat/completions' },
];

describeAgents('the glass box with real agents: one session, raw beside received, one trace, one id', () => {
  for (const { agent, api, server } of AGENTS)
    it.skipIf(!chromiumAvailable)(
      `${agent}: a leaky model's session in the page, the API, the log and the spans`,
      async ({ expect }) => {
        mkdirSync(ARTIFACTS, { recursive: true });
        const receiver = await otlpReceiver();
        const turns: Turn[] = [];
        let searched: { id: string; shown: string | null } | undefined;
        try {
          const otlp = {
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
            OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          };
          const claudeTrace = {
            ...otlp,
            TRACEPARENT: `00-${TRACE_ID}-00f067aa0ba902b7-01`,
            CLAUDE_CODE_ENABLE_TELEMETRY: '1',
            CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: '1',
            CLAUDE_CODE_PROPAGATE_TRACEPARENT: '1',
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_METRICS_EXPORTER: 'none',
            OTEL_LOGS_EXPORTER: 'none',
          };
          const r: CaseResult = await runCase({
            agent,
            mode: 'leak',
            task: CORE_TASK,
            via: 'toolproof',
            env: otlp,
            // Not forced: the model writes its call as text, and toolproof recovers it.
            file: () => ({ defaults: { forceToolUse: false } }),
            ...(agent === 'claude' ? { target: { env: claudeTrace } } : {}),
            afterRun: async (origin) => {
              const { page, close } = await openPage();
              try {
                const list = (await (await fetch(`${origin}/inspect/api/requests?limit=1000`)).json()) as {
                  requests: Array<{ id: string; session: string }>;
                };
                // The session's page lists every request of the run.
                const session = list.requests[0]?.session ?? '';
                await page.goto(`${origin}/inspect#/?session=${encodeURIComponent(session)}`);
                await expect
                  .poll(() => page.locator('#requests tr[data-id]').count())
                  .toBe(list.requests.length);
                await page.screenshot({ path: join(ARTIFACTS, `${agent}-list.png`), fullPage: true });
                for (const { id } of list.requests.slice().reverse()) {
                  await page.goto(`${origin}/inspect#/r/${encodeURIComponent(id)}`);
                  await page.locator('#client-received').waitFor();
                  await page.locator('#model-wrote').waitFor();
                  turns.push({
                    id,
                    wrote: (await page.locator('#model-wrote').textContent()) ?? '',
                    marked: await page.locator('#model-wrote mark.recovered').allTextContents(),
                    received: (await page.locator('#client-received').textContent()) ?? '',
                    calls: await page.locator('#client-received .call b').allTextContents(),
                  });
                  if (turns.length === 1)
                    await page.screenshot({ path: join(ARTIFACTS, `${agent}-turn.png`), fullPage: true });
                }
                // An id in hand (the header, a log line, a span): the list's request-id field opens it.
                const id = r_id(list.requests);
                await page.goto(`${origin}/inspect`);
                const field = page.locator('input[name=id]');
                await field.fill(id);
                await field.press('Enter');
                await expect.poll(() => page.evaluate('location.hash')).toBe(`#/r/${encodeURIComponent(id)}`);
                await page.locator('#client-received').waitFor();
                searched = { id, shown: await page.locator('#request-id').textContent() };
              } finally {
                await close();
              }
            },
          });
          const spans = receiver.spans;
          const why = `${describeRun(r)}\nturns: ${JSON.stringify(turns, null, 1)}\nspans: ${spans.map(describeSpan).join(' | ')}`;
          // The task done, through leak recovery alone (nothing forced).
          expect(r.run.exitCode, why).toBe(0);
          expect(r.disk, why).toEqual([]);
          expect(r.logs.filter((l) => l.api === api).length, why).toBeGreaterThan(0);
          // ONE session, in the API (list, session view, session filter) and in the page's list.
          expectSessions(r, { agent });
          const posts = r.sent.filter((s) => s.method === 'POST');
          expect(turns.length, why).toBe(posts.length);
          // The leaked call: the model's text beside the call the client received, the text marked.
          const leaked = turns.filter((t) => t.marked.some((m) => m.includes('<tool_call>')));
          expect(leaked.length, why).toBeGreaterThan(0);
          for (const t of leaked) {
            expect(t.wrote, why).toContain('<tool_call>');
            expect(t.received, why).not.toContain('<tool_call>');
            expect(t.calls.length, why).toBeGreaterThan(0);
          }
          // Every turn that answered shows both sides, none "null".
          for (const t of turns) expect(`${t.wrote}\n${t.received}`, why).not.toMatch(/\bnull\b|undefined/);
          // One id everywhere: the header the agent received, the capture, the log line, the span.
          const ids = posts.map((s) => s.requestId);
          expect(
            ids.every((x) => typeof x === 'string' && x !== ''),
            why,
          ).toBe(true);
          expect(
            turns.map((t) => t.id),
            why,
          ).toEqual(ids);
          const [session = ''] = r.inspect?.sessions.map((x) => x.session) ?? [];
          const logs = r.logs.filter((l) => l.msg === 'request' || typeof l.reqId === 'string');
          for (const id of ids) {
            const line = logs.find((l) => l.reqId === id && typeof l.traceId === 'string');
            expect(line, `${why}\nno log line for ${id}`).toBeDefined();
            const mine = spans.filter((x) => x.kind === 2 && x.attributes['toolproof.request_id'] === id);
            expect(mine.length, `${why}\nno server span for ${id}`).toBe(1);
            const span = mine[0]!;
            expect(span.name, why).toBe(server);
            expect(span.traceId, why).toBe(line?.traceId);
            // Each attempt nests under it, in its trace.
            const attempts = spans.filter((x) => x.kind === 3 && x.parentSpanId === span.spanId);
            expect(attempts.length, why).toBeGreaterThan(0);
            for (const a of attempts) {
              expect(a.traceId, why).toBe(span.traceId);
              expect(a.attributes['gen_ai.operation.name'], why).toBe('chat');
              expect(a.attributes['gen_ai.provider.name'], why).toBe('openai');
              // The agent's session, as the inspector names it: a GenAI backend groups its turns.
              expect(a.attributes['gen_ai.conversation.id'], why).toBe(session.slice(2));
            }
            // The leak is on the span as the page shows it.
            const turn = turns.find((t) => t.id === id);
            if (turn?.marked.length)
              expect(
                span.events.map((e) => e.name),
                why,
              ).toContain('toolproof.leak');
            // Claude Code's requests continue its TRACEPARENT.
            if (agent === 'claude') expect(span.traceId, why).toBe(TRACE_ID);
          }
          expect(searched?.shown, why).toBe(searched?.id);
        } finally {
          await receiver.close();
        }
      },
    );
});

/** The id of the run's first leaked turn, else its first request. */
function r_id(requests: Array<{ id: string }>): string {
  return requests.at(-1)?.id ?? '';
}

function describeSpan(x: ReceivedSpan): string {
  return `${x.kind} ${x.name} ${x.traceId}/${x.spanId}<${x.parentSpanId} ${String(x.attributes['toolproof.request_id'] ?? '')} [${x.events.map((e) => e.name).join(',')}]`;
}
