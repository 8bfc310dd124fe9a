/**
 * The inspector's API (docs/inspect.md) over real HTTP: what a request leaves in the capture
 * ring, its filters and sessions, the keys, and what a capture never keeps (credentials).
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { affinityKey } from '../../server/affinity.js';
import { sessionLabel } from '../../server/capture/recorder.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatImageMessage, PNG_300_BASE64 } from '../support/images.js';
import { startProxy } from '../support/harness.js';
import { createSimulator } from '../../simulator/index.js';
import type { RecordedRequest, Simulator } from '../../simulator/types.js';
import { collectStream, type Stack, startStack, weatherTool, weatherTurn } from './stack.js';

/** Copy as curl is run as a user runs it, where curl is installed. */
const hasCurl = spawnSync('curl', ['--version']).status === 0;
const execFileAsync = promisify(execFile);

let stack: Stack | undefined;
/** Simulators a test starts beside its stack's. */
let replicas: Simulator[] = [];
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  for (const r of replicas.splice(0)) await r.close();
});

const tools = [weatherTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const scenario = (v: unknown, extra: Record<string, string> = {}) => ({
  headers: { 'x-sim-scenario': typeof v === 'string' ? v : JSON.stringify(v), ...extra },
});
const getJson = async (s: Stack, path: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${s.origin}${path}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
};
/** A Hermes call written as text (a `raw` action is sent as it is, even under "required"). */
const LEAKED =
  'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
type Summary = {
  id: string;
  outcome: string;
  kinds: string[];
  session: string;
  status: number;
  attempts: number;
};

describe('the capture behind /inspect/api', () => {
  it('keeps each request whole: attempts, decisions, what the model wrote and what the client received', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const leakRes = await stack.client.chat.completions
      .create({ model: 'sim', messages: user, tools }, scenario({ raw: LEAKED }))
      .withResponse();
    const leakId = leakRes.response.headers.get('x-request-id')!;
    const named = { type: 'function' as const, function: { name: 'get_weather' } };
    await collectStream(
      await stack.client.chat.completions.create(
        { model: 'sim', messages: user, tools, tool_choice: named, stream: true },
        scenario([{ say: 'no' }, { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }]),
      ),
    );
    await expect(
      stack.client.chat.completions.create(
        { model: 'sim', messages: user, tools },
        scenario({ error: { status: 500, message: 'CUDA out of memory' } }),
      ),
    ).rejects.toMatchObject({ status: 500 });

    const list = await getJson(stack, '/inspect/api/requests');
    expect(list.status).toBe(200);
    const requests = list.body.requests as Summary[];
    expect(requests.map((r) => r.outcome)).toEqual(['failed', 'retried', 'leak_recovered']);
    expect(requests[2]!.id).toBe(leakId);

    const leakView = (await getJson(stack, `/inspect/api/requests/${leakId}`)).body as {
      record: {
        decisions: Array<{ kind: string; reason: string }>;
        upstreamAttempts: Array<{
          request: { text: string };
          status: number;
          ttfbMs: number;
          totalMs: number;
        }>;
      };
      modelWrote: Array<{ content: string }>;
      clientReceived: { content: string; calls: Array<{ name: string }> };
      curl: string[];
    };
    expect(leakView.modelWrote[0]!.content).toContain('<tool_call>');
    expect(leakView.clientReceived.calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(leakView.clientReceived.content).not.toContain('<tool_call>');
    expect(leakView.record.decisions.find((d) => d.kind === 'leak')?.reason).toMatch(/hermes.*recovered/);
    const attempt = leakView.record.upstreamAttempts[0]!;
    expect(JSON.parse(attempt.request.text).tool_choice).toBe('required');
    expect(attempt.status).toBe(200);
    expect(attempt.totalMs).toBeGreaterThanOrEqual(0);
    expect(leakView.curl[0]).toContain('/chat/completions');

    const retry = (await getJson(stack, `/inspect/api/requests/${requests[1]!.id}`)).body as {
      record: {
        decisions: Array<{ kind: string; reason: string; detail?: string }>;
        upstreamAttempts: unknown[];
      };
      clientReceived: { calls: Array<{ name: string }> };
    };
    expect(retry.record.upstreamAttempts).toHaveLength(2);
    const feedback = retry.record.decisions.find((d) => d.kind === 'retry-feedback');
    expect(JSON.parse(feedback!.detail!).feedback).toContain('do not answer in prose');
    // How the retry ended, in its reason (not "corrective-retry: retry-outcome", the outcome
    // left to the detail).
    expect(retry.record.decisions.find((d) => d.kind === 'retry-outcome')?.reason).toBe(
      'retry outcome (outcome: fixed)',
    );
    expect(retry.clientReceived.calls.map((c) => c.name)).toEqual(['get_weather']);

    const failed = (await getJson(stack, `/inspect/api/requests/${requests[0]!.id}`)).body as {
      record: { status: number; upstreamAttempts: Array<{ error?: { message: string } }> };
    };
    expect(failed.record.status).toBe(500);
    expect(failed.record.upstreamAttempts[0]!.error?.message).toContain('CUDA out of memory');

    // Filters.
    const onlyFailed = (await getJson(stack, '/inspect/api/requests?outcome=failed')).body
      .requests as Summary[];
    expect(onlyFailed.map((r) => r.id)).toEqual([requests[0]!.id]);
    expect(
      ((await getJson(stack, '/inspect/api/requests?model=nope')).body.requests as Summary[]).length,
    ).toBe(0);
    expect((await getJson(stack, '/inspect/api/requests/unknown-id')).status).toBe(404);
    expect((await getJson(stack, '/inspect/api/requests?outcome=bogus')).status).toBe(400);

    // A re-ask whose second answer is still prose: the client got the invalid turn, so the
    // failed filter finds it, and it still shows it was retried.
    const stillInvalid = await stack.client.chat.completions
      .create(
        { model: 'sim', messages: user, tools, tool_choice: named },
        scenario([{ say: 'no' }, { say: 'still no' }]),
      )
      .withResponse();
    const stillId = stillInvalid.response.headers.get('x-request-id')!;
    const failedNow = (await getJson(stack, '/inspect/api/requests?outcome=failed')).body
      .requests as Summary[];
    expect(failedNow.map((r) => r.id)).toEqual([stillId, requests[0]!.id]);
    expect(failedNow[0]).toMatchObject({ outcome: 'failed', kinds: ['failed', 'retried'], status: 200 });
    const retriedNow = (await getJson(stack, '/inspect/api/requests?outcome=retried')).body
      .requests as Summary[];
    expect(retriedNow.map((r) => r.id)).toEqual([stillId, requests[1]!.id]);
    const stillView = (await getJson(stack, `/inspect/api/requests/${stillId}`)).body as {
      record: { decisions: Array<{ kind: string; reason: string }> };
    };
    expect(stillView.record.decisions.map((d) => d.kind)).toContain('returned-invalid');
  });

  it('an upstream refusal sent again rewritten: the refused attempt with its error, the decision, the counters once', async () => {
    stack = await startStack({ sim: { personality: 'vllm', scenario: 'demo', vision: false } });
    const res = await stack.client.chat.completions
      .create({ model: 'sim', messages: [chatImageMessage('What is this?')] })
      .withResponse();
    const id = res.response.headers.get('x-request-id')!;
    const view = (await getJson(stack, `/inspect/api/requests/${id}`)).body as {
      record: {
        outcome: string;
        decisions: Array<{ kind: string; reason: string; policy?: string; attempt: number }>;
        upstreamAttempts: Array<{
          status: number;
          error?: { code: string; status: number; message: string };
          request: { text: string };
        }>;
        harness: { attempts: number; refused?: string[]; degraded?: Record<string, number> };
      };
    };
    const [refused, resent] = view.record.upstreamAttempts;
    expect(refused!.status).toBe(400);
    expect(refused!.request.text).toContain(PNG_300_BASE64.slice(0, 40));
    // The refused attempt says why, as a relayed one would.
    expect(refused!.error).toMatchObject({ code: 'TP_ERR_UPSTREAM_ERROR', status: 400 });
    expect(refused!.error!.message).toContain('not a multimodal model');
    expect(resent!.status).toBe(200);
    expect(resent!.error).toBeUndefined();
    expect(resent!.request.text).toContain('[image omitted: image/png, 300 B');
    expect(resent!.request.text).not.toContain(PNG_300_BASE64.slice(0, 40));
    const decision = view.record.decisions.find((d) => d.kind === 'vision-refused');
    expect(decision).toMatchObject({ policy: 'images', attempt: 1 });
    expect(decision!.reason).toMatch(/refused the images.*sent again/);
    // What went instead, in words (it read "image note", the kind's name, before).
    expect(view.record.decisions.find((d) => d.kind === 'image-note')).toMatchObject({
      policy: 'images',
      reason: '1 image went as a note: the model cannot see',
    });
    // It took another upstream attempt: retried, and the list's outcome filter finds it.
    expect(view.record.outcome).toBe('retried');
    const retried = (await getJson(stack, '/inspect/api/requests?outcome=retried')).body
      .requests as Summary[];
    expect(retried.map((r) => r.id)).toEqual([id]);
    expect(view.record.harness).toMatchObject({
      attempts: 2,
      refused: ['vision-refused'],
      degraded: { 'image-note': 1 },
    });
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    const line = (name: string) => metrics.split('\n').filter((l) => l.startsWith(name));
    expect(line('toolproof_upstream_refusals_total')).toEqual([
      expect.stringMatching(/\{upstream="[^"]+",model="sim",decision="vision-refused"\} 1$/),
    ]);
    expect(line('toolproof_upstream_errors_total')).toEqual([
      expect.stringMatching(/kind="status_4xx"\} 1$/),
    ]);
    expect(line('toolproof_degraded_content_total')).toEqual([
      expect.stringMatching(/kind="image-note"\} 1$/),
    ]);
    expect(line('toolproof_retries_total')).toEqual([]);
    expect(line('toolproof_tool_choice_fallbacks_total')).toEqual([]);
  });

  it('a stream the upstream cut before any answer went out, sent again: retried, found by the outcome filter', async () => {
    let cuts = 1;
    stack = await startStack({
      sim: {
        scenario: () => (cuts-- > 0 ? { say: 'hello there', dieAfterChunks: 1 } : { say: 'hello there' }),
      },
    });
    const stream = await stack.client.chat.completions.create({
      model: 'sim',
      messages: user,
      tools,
      stream: true,
    });
    await collectStream(stream);
    const requests = (await getJson(stack, '/inspect/api/requests?outcome=retried')).body
      .requests as Summary[];
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ outcome: 'retried', attempts: 2, status: 200 });
  });

  it('a backend rejecting "required": the rejected attempt keeps its error, the fallback decision, the attempt sent with "auto"', async () => {
    stack = await startStack({ sim: { scenario: 'prose', rejectRequired: true } });
    const res = await stack.client.chat.completions
      .create({ model: 'sim', messages: user, tools })
      .withResponse();
    const view = (await getJson(stack, `/inspect/api/requests/${res.response.headers.get('x-request-id')}`))
      .body as {
      record: {
        decisions: Array<{ kind: string; policy?: string; attempt: number; reason: string }>;
        upstreamAttempts: Array<{ status: number; error?: { status: number }; request: { text: string } }>;
      };
    };
    // vLLM's prose answer carries `tool_calls: []`, which toolproof leaves out: said in words
    // (it read "normalizations: empty-tool-calls").
    expect(view.record.decisions.find((d) => d.kind === 'empty-tool-calls')?.reason).toBe(
      "normalized: the upstream's empty tool_calls list left out",
    );
    const [rejected, sent] = view.record.upstreamAttempts;
    expect(rejected!.status).toBe(400);
    expect(rejected!.error).toMatchObject({ status: 400 });
    expect(JSON.parse(sent!.request.text).tool_choice).toBe('auto');
    expect(sent!.error).toBeUndefined();
    expect(view.record.decisions.map((d) => d.kind)).toContain('fallback');
    // Named by the policy whose "required" was rejected, as the refusals' decisions are.
    expect(view.record.decisions.find((d) => d.kind === 'fallback')).toMatchObject({
      policy: 'force-tool-use',
      attempt: 1,
    });
    const summary = (await getJson(stack, '/inspect/api/requests?outcome=retried')).body
      .requests as Summary[];
    expect(summary.map((r) => r.id)).toEqual([res.response.headers.get('x-request-id')]);
  });

  it('groups the turns of one conversation into a session, with the cached ratio and the prefix kept', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const session = { 'x-claude-code-session-id': 'agent-session-1' };
    const messages: Array<Record<string, unknown>> = [{ role: 'user', content: 'Weather in Paris?' }];
    for (let turn = 0; turn < 3; turn++)
      await weatherTurn(stack, messages, scenario('tools', session).headers, {
        result: 'sunny, 21 C',
        next: `And turn ${turn + 2}?`,
      });
    await stack.client.chat.completions.create({ model: 'sim', messages: user, tools });
    const sessions = (await getJson(stack, '/inspect/api/sessions')).body.sessions as Array<{
      session: string;
      requests: number;
    }>;
    expect(sessions.find((s) => s.session === 'h:agent-session-1')?.requests).toBe(3);
    const detail = (
      await getJson(stack, `/inspect/api/session?key=${encodeURIComponent('h:agent-session-1')}`)
    ).body as {
      turns: Array<{ cachedRatio: number | null; prefix: { kept: boolean } | null }>;
    };
    expect(detail.turns).toHaveLength(3);
    expect(detail.turns[0]!.prefix).toBeNull();
    expect(detail.turns.slice(1).map((t) => t.prefix?.kept)).toEqual([true, true]);
    expect(detail.turns[2]!.cachedRatio).toBeGreaterThan(0.5);
  });

  it("groups a conversation that names no session by its opening messages, the affinity key's label, on every door", async () => {
    stack = await startStack({ sim: { personality: 'llama-server', scenario: 'prose' } });
    const s = stack;
    const system = { role: 'system' as const, content: 'You are terse.' };
    const opening = {
      model: 'sim',
      messages: [system, { role: 'user' as const, content: 'Weather in Paris?' }],
    };
    const messages: Array<Record<string, unknown>> = [...opening.messages];
    for (let turn = 0; turn < 3; turn++) {
      const res = await s.client.chat.completions.create({ model: 'sim', messages: messages as never });
      messages.push(res.choices[0]!.message as never, { role: 'user', content: `And turn ${turn + 2}?` });
    }
    await s.client.chat.completions.create({
      model: 'sim',
      messages: [system, { role: 'user', content: 'Hi' }],
    });
    const anthropic = (content: string[]) =>
      fetch(`${s.origin}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'sim',
          max_tokens: 100,
          system: 'You are an agent.',
          messages: content.map((c, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: c })),
        }),
      });
    const first = await anthropic(['List the files.']);
    expect(first.status).toBe(200);
    // The next turn carries the reply back (which marks the run: docs/inspect.md).
    const reply = ((await first.json()) as { content: Array<{ text?: string }> }).content
      .map((b) => b.text ?? '')
      .join('');
    expect((await anthropic(['List the files.', reply, 'Now read one.'])).status).toBe(200);

    const list = (await getJson(s, '/inspect/api/requests')).body.requests as Summary[];
    const sessions = list.map((r) => r.session).reverse();
    // The chat door's key, read from the body the record keeps: what affinityKey gives the
    // request, and the run's mark (the model's first reply, which every later turn carries).
    expect(sessions[0]!.startsWith(`${sessionLabel(affinityKey({}, opening, opening as never))}/`)).toBe(
      true,
    );
    expect(sessions.slice(0, 3)).toEqual([sessions[0], sessions[0], sessions[0]]);
    expect(sessions[3]).not.toBe(sessions[0]);
    expect(sessions[3]).toMatch(/^o:sim\/\/\d+\.\d+\/[0-9a-f]{8}$/);
    // The Messages door's (its chat form, translated): one session for its two turns, another one.
    expect(sessions[4]).toMatch(/^o:sim\/\/\d+\.\d+\/[0-9a-f]{8}$/);
    expect(sessions[5]).toBe(sessions[4]);
    expect(new Set(sessions).size).toBe(3);
    const grouped = (await getJson(s, '/inspect/api/sessions')).body.sessions as Array<{
      session: string;
      requests: number;
    }>;
    expect(grouped.find((g) => g.session === sessions[0])?.requests).toBe(3);
    const filtered = (await getJson(s, `/inspect/api/requests?session=${encodeURIComponent(sessions[0]!)}`))
      .body.requests as Summary[];
    expect(filtered).toHaveLength(3);
  });

  it('names the first byte that changed when a turn rewrites an earlier message', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const session = { 'x-claude-code-session-id': 'broken-prefix' };
    const base = [{ role: 'system' as const, content: 'You are terse. Date: Monday.' }, ...user];
    await stack.client.chat.completions.create({ model: 'sim', messages: base }, scenario('prose', session));
    const changed = [{ role: 'system' as const, content: 'You are terse. Date: Tuesday.' }, ...user];
    await stack.client.chat.completions.create(
      { model: 'sim', messages: changed },
      scenario('prose', session),
    );
    const detail = (await getJson(stack, `/inspect/api/session?key=${encodeURIComponent('h:broken-prefix')}`))
      .body as {
      turns: Array<{ prefix: { kept: boolean; where: string; before: string; after: string } | null }>;
    };
    const p = detail.turns[1]!.prefix!;
    expect(p.kept).toBe(false);
    expect(p.where).toBe('messages[0]');
    expect(p.before).toContain('Monday');
    expect(p.after).toContain('Tuesday');
  });

  it('names the first byte of an emoji the agent changed into another, not a byte inside it', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    // 😀 (U+1F600) and 🚀 (U+1F680) share their first UTF-16 unit: the characters first differ in
    // the second. Counted to there, the lone first unit was 3 bytes of its own: "at its byte N+3",
    // inside the emoji (whose UTF-8 bytes differ from the third on).
    const session = { 'x-claude-code-session-id': 'offset-emoji' };
    for (const mark of ['😀', '🚀'])
      await stack.client.chat.completions.create(
        { model: 'sim', messages: [{ role: 'system', content: `Status: ${mark} ok.` }, ...user] },
        scenario('prose', session),
      );
    const detail = (await getJson(stack, `/inspect/api/session?key=${encodeURIComponent('h:offset-emoji')}`))
      .body as { turns: Array<{ prefix: { kept: boolean; offset: number; partOffset: number } | null }> };
    const p = detail.turns[1]!.prefix!;
    expect(p.kept).toBe(false);
    expect(p.partOffset).toBe(Buffer.byteLength('{"role":"system","content":"Status: '));
    expect(p.offset - p.partOffset).toBe(Buffer.byteLength('null'));
  });

  it('counts the offset of a break in UTF-8 bytes, not in characters', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    // Two sessions alike but for five characters before the change: "é" is two bytes, "e" one.
    const offsetOf = async (id: string, lead: string) => {
      const session = { 'x-claude-code-session-id': id };
      for (const day of ['Monday', 'Tuesday'])
        await stack!.client.chat.completions.create(
          { model: 'sim', messages: [{ role: 'system', content: `${lead} Date: ${day}.` }, ...user] },
          scenario('prose', session),
        );
      const detail = (await getJson(stack!, `/inspect/api/session?key=${encodeURIComponent(`h:${id}`)}`))
        .body as { turns: Array<{ prefix: { kept: boolean; offset: number; partOffset: number } | null }> };
      const p = detail.turns[1]!.prefix!;
      expect(p.kept).toBe(false);
      // In the message too: its bytes up to the change (the prompt's are the tools' before it).
      expect(p.partOffset).toBe(Buffer.byteLength(`{"role":"system","content":"${lead} Date: `));
      expect(p.offset - p.partOffset).toBe(Buffer.byteLength('null'));
      return p.offset;
    };
    const ascii = await offsetOf('offset-ascii', 'eeeee');
    const accented = await offsetOf('offset-accented', 'ééééé');
    expect(accented - ascii).toBe(5);
  });

  // opencode opens its session with a title request (no tools, a prompt of its own), then its
  // loop: compared with the title, the loop's first turn read as a break at byte 0 of the tools.
  it("a request without tools beside an agent's loop is a prompt of its own, no break; the loop's turns continue each other", async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const session = { 'x-session-affinity': 'titled-session' };
    const title = async (text: string) =>
      stack!.client.chat.completions.create(
        {
          model: 'sim',
          messages: [
            { role: 'system', content: 'Write a title.' },
            { role: 'user', content: text },
          ],
        },
        scenario('prose', session),
      );
    const messages: Array<Record<string, unknown>> = [...user];
    const turn = () => weatherTurn(stack!, messages, scenario('tools', session).headers);
    await title('Weather in Paris?');
    await turn();
    await turn();
    await title('A summary, please.'); // a side request in the middle
    await turn();
    const detail = (await getJson(stack, '/inspect/api/session?key=h%3Atitled-session')).body as {
      turns: Array<{ prefix: unknown }>;
    };
    expect(detail.turns.map((t) => t.prefix)).toEqual([
      null,
      { opens: true },
      { kept: true },
      // The second title shares its system message with the first: compared with it, not the loop.
      expect.objectContaining({ kept: false, where: 'messages[1]' }),
      { kept: true },
    ]);
  });

  // Claude Code sends side requests in its session that fork the main loop: its prompt and one
  // user message of their own. Compared with the fork, the main loop's next turn showed a break
  // at the fork's message (cached ratio 0.99) although it kept every byte it had sent.
  it("a side request that forks the conversation is no break for the main loop's next turn", async () => {
    stack = await startStack({ sim: { personality: 'vllm', promptTokensDetails: true } });
    const session = { 'x-claude-code-session-id': 'forked' };
    const system = { role: 'system' as const, content: 'You are an agent. '.repeat(40) };
    const m1 = [system, ...user];
    const call = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        {
          id: 'c1',
          type: 'function' as const,
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        },
      ],
    };
    const m2 = [...m1, call, { role: 'tool' as const, tool_call_id: 'c1', content: 'sunny' }];
    const fork = (m: readonly unknown[]) => [
      ...m,
      { role: 'user' as const, content: 'CRITICAL: Respond with TEXT ONLY.' },
    ];
    const send = (messages: unknown[]) =>
      stack!.client.chat.completions.create(
        { model: 'sim', messages: messages as never, tools },
        scenario('prose', session),
      );
    await send(m1);
    await send(fork(m1));
    await send(m2);
    await send(fork(m2));
    // A real rewrite after the forks: the tool result the main loop sent is changed.
    const m3 = [...m2.slice(0, -1), { role: 'tool' as const, tool_call_id: 'c1', content: 'rainy' }, ...user];
    await send(m3);
    const detail = (await getJson(stack, `/inspect/api/session?key=${encodeURIComponent('h:forked')}`))
      .body as {
      turns: Array<{ prefix: { kept: boolean; where?: string; before?: string; after?: string } | null }>;
    };
    expect(detail.turns.map((t) => t.prefix?.kept ?? null)).toEqual([null, true, true, true, false]);
    expect(detail.turns[4]!.prefix).toMatchObject({ where: 'messages[3]' });
    expect(detail.turns[4]!.prefix!.before).toContain('sunny');
    expect(detail.turns[4]!.prefix!.after).toContain('rainy');
  });

  it('never keeps a credential: auth headers, API keys and cookies are redacted', async () => {
    const key = 'sk-inspect-secret-0123456789';
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: key }, apiKey: key });
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-api-key': key,
        cookie: `session=${key}`,
        'x-goog-api-key': key,
        'proxy-authorization': `Basic ${key}`,
      },
      body: JSON.stringify({ model: 'sim', messages: user, tools }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id')!;
    const detail = await fetch(`${stack.origin}/inspect/api/requests/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const text = await detail.text();
    expect(detail.status).toBe(200);
    expect(text).not.toContain(key);
    const headers = (JSON.parse(text) as { record: { clientRequest: { headers: Record<string, string> } } })
      .record.clientRequest.headers;
    expect(headers.authorization).toBe('[redacted]');
    expect(headers['x-api-key']).toBe('[redacted]');
    expect(headers.cookie).toBe('[redacted]');
    expect(headers['content-type']).toBe('application/json');
  });

  // docs/inspect.md: "any header named like a key, token, secret or password". Only `api-key`
  // was matched: Azure API Management's subscription key, an `x-auth` or `x-access-key` header
  // and a private key were kept verbatim in the capture.
  it('redacts every header named like a key or an auth credential, not only api-key', async () => {
    const key = 'sk-inspect-secret-0123456789';
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: key }, apiKey: key });
    const secrets: Record<string, string> = {
      'ocp-apim-subscription-key': 'secret-one-0001',
      'x-auth': 'secret-two-0002',
      'x-access-key': 'secret-three-0003',
      'private-key': 'secret-four-0004',
      authentication: 'secret-five-0005',
      'x-litellm-key': 'secret-six-0006',
    };
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...secrets },
      body: JSON.stringify({ model: 'sim', messages: user, tools }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id')!;
    const text = await (
      await fetch(`${stack.origin}/inspect/api/requests/${id}`, {
        headers: { authorization: `Bearer ${key}` },
      })
    ).text();
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    const headers = (JSON.parse(text) as { record: { clientRequest: { headers: Record<string, string> } } })
      .record.clientRequest.headers;
    for (const name of Object.keys(secrets)) expect(headers[name]).toBe('[redacted]');
    expect(headers['content-type']).toBe('application/json');
  });

  // Named keys are tenants (issue 29: allow-lists, limits): the capture holds their prompts and
  // answers. A key limited to one model listed, opened and replayed every other key's requests.
  it('a named key sees only its own requests; inspect: all sees every one, the flat keys beside them only theirs', async () => {
    const keys = {
      alice: 'sk-alice-inspect-0001',
      bob: 'sk-bob-inspect-0002',
      ops: 'sk-ops-inspect-0003',
      flat: 'sk-flat-inspect-0004',
    };
    stack = await startStack({
      env: { TOOLPROOF_API_KEYS: keys.flat },
      file: {
        keys: [
          { name: 'alice', key: keys.alice },
          { name: 'bob', key: keys.bob, models: ['sim'] },
          { name: 'ops', key: keys.ops, inspect: 'all' },
        ],
      },
    });
    const ask = async (key: string, text: string, session: string) => {
      const res = await fetch(`${stack!.url}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key}`,
          'x-session-id': session,
        },
        body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: text }], tools }),
      });
      expect(res.status).toBe(200);
      return res.headers.get('x-request-id')!;
    };
    const aliceId = await ask(keys.alice, 'alice private prompt', 'alice-session');
    const bobId = await ask(keys.bob, 'bob private prompt', 'bob-session');
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const ids = async (key: string) =>
      ((await getJson(stack!, '/inspect/api/requests', as(key))).body.requests as Summary[]).map((r) => r.id);

    expect(await ids(keys.bob)).toEqual([bobId]);
    expect(await ids(keys.alice)).toEqual([aliceId]);
    // Asking for another owner in the query changes nothing.
    const forged = await getJson(stack, '/inspect/api/requests?owner=alice', as(keys.bob));
    expect((forged.body.requests as Summary[]).map((r) => r.id)).toEqual([bobId]);
    expect((await getJson(stack, `/inspect/api/requests/${aliceId}`, as(keys.bob))).status).toBe(404);
    expect((await getJson(stack, `/inspect/api/requests/${bobId}`, as(keys.bob))).status).toBe(200);
    const sessions = (await getJson(stack, '/inspect/api/sessions', as(keys.bob))).body.sessions as Array<{
      session: string;
    }>;
    expect(sessions).toHaveLength(1);
    const aliceSession = (await getJson(stack, `/inspect/api/requests/${aliceId}`, as(keys.alice))).body
      .record as { session: string; key: string };
    expect(aliceSession.key).toBe('alice');
    const peek = await getJson(
      stack,
      `/inspect/api/session?key=${encodeURIComponent(aliceSession.session)}`,
      as(keys.bob),
    );
    expect(JSON.stringify(peek.body)).not.toContain('alice private prompt');
    expect(peek.body.turns).toEqual([]);

    expect(new Set(await ids(keys.ops))).toEqual(new Set([aliceId, bobId]));
    // Beside named keys, the flat keys see only the flat keys' requests (redteam26).
    expect(await ids(keys.flat)).toEqual([]);
  });

  // A full ring gives up the oldest record of the key holding the most: one busy key's loop
  // pushed every other key's records out (its failing request gone in a few dozen requests:
  // redteam24). A key's records still go for another key's once it is the one holding the most,
  // and a key that sees only its own is told how many (glass16).
  it("keeps a quiet key's records through a busy key's loop, and counts those dropped for others", async () => {
    const keys = { alice: 'sk-alice-dropped-0001', bob: 'sk-bob-dropped-0002' };
    stack = await startStack({
      env: { TOOLPROOF_CAPTURE_MB: '0.25' },
      file: {
        keys: [
          { name: 'alice', key: keys.alice },
          { name: 'bob', key: keys.bob },
        ],
      },
    });
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const ask = async (key: string, text: string, extra: Record<string, string> = {}) => {
      const res = await fetch(`${stack!.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...as(key), ...extra },
        body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: text }] }),
      });
      await res.text();
      return res.headers.get('x-request-id')!;
    };
    const failing = await ask(keys.alice, 'alice asks once', {
      'x-sim-scenario': JSON.stringify({ error: { status: 500, message: 'CUDA out of memory' } }),
    });
    const ring = stack.app.toolproof.capture!;
    type Listed = { requests: unknown[]; droppedForOthers?: { records: number; newest: number } };
    const list = async (key: string) =>
      (await getJson(stack!, '/inspect/api/requests', as(key))).body as Listed;
    // Bob's loop of 20 KB prompts: his own oldest go, alice's request stays.
    for (let i = 0; i < 40; i++) {
      await ask(keys.bob, `bob ${i} ${'x'.repeat(20_000)}`);
      expect(ring.bytes).toBeLessThanOrEqual(ring.limits.maxBytes);
    }
    expect((await getJson(stack, `/inspect/api/requests/${failing}`, as(keys.alice))).status).toBe(200);
    const bob = await list(keys.bob);
    expect(bob.requests.length).toBeLessThan(40);
    expect(bob.droppedForOthers).toBeUndefined();
    expect((await list(keys.alice)).droppedForOthers).toBeUndefined();
    // Now alice loops: bob holds the most until she does, so his records go for hers (counted),
    // then her own oldest (her failing request) for her newer ones (not counted).
    for (let i = 0; i < 40; i++) await ask(keys.alice, `alice ${i} ${'x'.repeat(20_000)}`);
    expect(ring.bytes).toBeLessThanOrEqual(ring.limits.maxBytes);
    const bobAfter = await list(keys.bob);
    expect(bobAfter.droppedForOthers!.records).toBeGreaterThan(0);
    expect(bobAfter.droppedForOthers!.newest).toBeGreaterThan(0);
    expect(bobAfter.requests.length).toBeGreaterThan(0);
    expect((await getJson(stack, `/inspect/api/requests/${failing}`, as(keys.alice))).status).toBe(404);
    expect((await list(keys.alice)).droppedForOthers).toBeUndefined();
  });

  it('answers a list the reader already holds (If-None-Match its ETag) with a 304 and no body', async () => {
    stack = await startStack();
    await stack.client.chat.completions.create({ model: 'sim', messages: user });
    const list = (headers: Record<string, string> = {}) =>
      fetch(`${stack!.origin}/inspect/api/requests`, { headers });
    const first = await list();
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    // The page keeps its copy: no browser writes the prompts to its disk cache.
    expect(first.headers.get('cache-control')).toBe('no-store');
    await first.text();
    const same = await list({ 'if-none-match': etag });
    expect(same.status).toBe(304);
    expect(await same.text()).toBe('');
    await stack.client.chat.completions.create({ model: 'sim', messages: user });
    const changed = await list({ 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(((await changed.json()) as { requests: unknown[] }).requests).toHaveLength(2);
  });

  // The page polls every 1-2 s: counted against the key's requests per minute, an open
  // inspector spent the minute, and the agent using the same key got 429s.
  it("reading the inspector does not spend the key's request rate", async () => {
    const key = 'sk-limited-inspect-0001';
    stack = await startStack({ file: { keys: [{ name: 'limited', key, requestsPerMinute: 3 }] } });
    const headers = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 6; i++)
      expect((await getJson(stack, '/inspect/api/requests', headers)).status).toBe(200);
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: user, tools }),
    });
    expect(res.status).toBe(200);
  });

  // Issue 28: "why did my agent stall?" A request its key's limits refused never began a call,
  // yet the inspector lists it (failed, 429, its error), at most one per key per second.
  it("lists a request its key's limit refused, failed with its 429, and a storm of them keeps the ring", async () => {
    const key = 'sk-limited-refused-0001';
    const msgKey = 'sk-limited-refused-0002';
    stack = await startStack({
      file: {
        keys: [
          { name: 'limited', key, requestsPerMinute: 1 },
          { name: 'messages-limited', key: msgKey, requestsPerMinute: 1 },
        ],
      },
    });
    const s = stack;
    const headers = { authorization: `Bearer ${key}` };
    const chat = (extra: Record<string, string> = {}) =>
      fetch(`${s.url}/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', ...extra },
        body: JSON.stringify({ model: 'sim', messages: user, tools }),
      });
    const conversation = { 'x-conversation-id': 'stalled-agent' };
    const ok = await chat(conversation);
    expect(ok.status).toBe(200);
    const okId = ok.headers.get('x-request-id')!;
    const refused = await chat(conversation);
    expect(refused.status).toBe(429);
    const refusedId = refused.headers.get('x-request-id')!;
    const wire = (await refused.json()) as { error: { code: string; message: string } };
    expect(wire.error.code).toBe('rate_limit_exceeded');

    const failed = (await getJson(s, '/inspect/api/requests?outcome=failed', headers)).body
      .requests as (Summary & { key: string; api: string; model: string })[];
    expect(failed.map((r) => r.id)).toEqual([refusedId]);
    expect(failed[0]).toMatchObject({
      status: 429,
      outcome: 'failed',
      attempts: 0,
      key: 'limited',
      api: 'chat',
    });
    expect(failed[0]!.model).toBe('sim');
    // In the session of the conversation it belongs to (the one its client names).
    const okRecord = (await getJson(s, `/inspect/api/requests/${okId}`, headers)).body as { record: Summary };
    expect(failed[0]!.session).toBe(okRecord.record.session);
    expect(failed[0]!.session).toContain('stalled-agent');
    const { record } = (await getJson(s, `/inspect/api/requests/${refusedId}`, headers)).body as {
      record: {
        error: { code: string; status: number; message: string };
        upstreamAttempts: unknown[];
        clientRequest: { headers: Record<string, string>; body: { text: string } };
        clientResponse: { status: number; body: { text: string } };
      };
    };
    expect(record.error).toEqual({ code: 'TP_ERR_RATE_LIMITED', status: 429, message: wire.error.message });
    expect(record.upstreamAttempts).toEqual([]);
    expect(record.clientRequest.headers.authorization).toBe('[redacted]');
    expect(JSON.stringify(record)).not.toContain(key);
    expect(record.clientRequest.body.text).toContain('Weather in Paris?');
    expect(record.clientResponse.status).toBe(429);
    expect(record.clientResponse.body.text).toContain('rate_limit_exceeded');

    // The Messages door's refusal, in its own words.
    const msgHeaders = {
      'x-api-key': msgKey,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    };
    const msgBody = JSON.stringify({ model: 'sim', max_tokens: 64, messages: user });
    expect(
      (await fetch(`${s.origin}/v1/messages`, { method: 'POST', headers: msgHeaders, body: msgBody })).status,
    ).toBe(200);
    const msgRefused = await fetch(`${s.origin}/v1/messages`, {
      method: 'POST',
      headers: msgHeaders,
      body: msgBody,
    });
    expect(msgRefused.status).toBe(429);
    const [msgRecord] = (await getJson(s, '/inspect/api/requests?outcome=failed', { 'x-api-key': msgKey }))
      .body.requests as (Summary & { key: string; api: string })[];
    expect(msgRecord).toMatchObject({ status: 429, key: 'messages-limited', api: 'messages' });
    const msgDetail = (await getJson(s, `/inspect/api/requests/${msgRecord!.id}`, { 'x-api-key': msgKey }))
      .body as { record: { clientResponse: { body: { text: string } } } };
    expect(msgDetail.record.clientResponse.body.text).toContain('rate_limit_error');

    // A client retrying in a tight loop: one record per key per second, the earlier ones kept.
    const began = Date.now();
    for (let i = 0; i < 200; i++) expect((await chat()).status).toBe(429);
    const seconds = Math.ceil((Date.now() - began) / 1000) + 1;
    const all = (await getJson(s, '/inspect/api/requests?limit=1000', headers)).body.requests as Summary[];
    expect(all.some((r) => r.id === okId)).toBe(true);
    expect(all.some((r) => r.id === refusedId)).toBe(true);
    expect(all.filter((r) => r.status === 429).length).toBeLessThanOrEqual(1 + seconds);
  });

  it('the page and its API refuse a request without a key when keys are set; Basic works for browsers', async () => {
    const key = 'sk-inspect-secret-0123456789';
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: key }, apiKey: key });
    for (const path of [
      '/inspect',
      '/inspect/inspect.js',
      '/inspect/api/requests',
      '/inspect/api/sessions',
      '/inspect/api/requests/x',
      '/inspect/api/session?key=x',
    ]) {
      const res = await fetch(`${stack.origin}${path}`);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate'), path).toMatch(/^Basic /);
      // What a browser user can do about it (the page cannot send a Bearer header).
      expect(((await res.json()) as { error: { message: string } }).error.message, path).toContain(
        'the password of the sign-in prompt',
      );
      expect(
        (await fetch(`${stack.origin}${path}`, { headers: { authorization: 'Bearer wrong-key-123' } }))
          .status,
      ).toBe(401);
      // A browser's page load (its user cancelled the prompt): a short page, not the JSON body.
      const html = await fetch(`${stack.origin}${path}`, {
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      });
      expect(html.status, path).toBe(401);
      expect(html.headers.get('www-authenticate'), path).toMatch(/^Basic /);
      expect(html.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      const text = await html.text();
      expect(text, path).toContain('<h1>An API key is needed</h1>');
      // Escaped: the message's quotes and angle brackets are entities, no markup of its own.
      expect(text, path).toContain('&quot;Authorization: Bearer &lt;key&gt;&quot;');
      expect(text, path).not.toMatch(/<script|<key>/i);
      // A script's fetch asking for JSON, or refusing HTML, keeps the JSON error.
      for (const accept of ['application/json', 'text/html;q=0, application/json'])
        expect(
          (await fetch(`${stack.origin}${path}`, { headers: { accept } })).headers.get('content-type'),
          `${path} ${accept}`,
        ).toMatch(/^application\/json/);
    }
    expect(
      (await fetch(`${stack.origin}/inspect/api/requests`, { headers: { authorization: `Bearer ${key}` } }))
        .status,
    ).toBe(200);
    expect(
      (await fetch(`${stack.origin}/inspect/api/requests`, { headers: { 'x-api-key': key } })).status,
    ).toBe(200);
    const basic = `Basic ${Buffer.from(`me:${key}`).toString('base64')}`;
    const page = await fetch(`${stack.origin}/inspect`, { headers: { authorization: basic } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('/inspect/inspect.js');
    // Basic is the inspector's alone: the API routes keep their documented headers.
    const chat = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: user }),
    });
    expect(chat.status).toBe(401);
  });

  it('reads ?limit= from the query string as a number (docs/inspect.md: 1-1000), and refuses anything else', async () => {
    stack = await startStack();
    for (let i = 0; i < 3; i++)
      await stack.client.chat.completions.create({ model: 'sim', messages: user, tools });
    const two = await getJson(stack, '/inspect/api/requests?limit=2');
    expect(two.status).toBe(200);
    expect((two.body.requests as Summary[]).length).toBe(2);
    expect(
      ((await getJson(stack, '/inspect/api/requests?limit=1000')).body.requests as Summary[]).length,
    ).toBe(3);
    for (const bad of ['0', '1001', 'x', '-1', '2.5']) {
      const res = await getJson(stack, `/inspect/api/requests?limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect((res.body.error as { param: string }).param).toBe('limit');
    }
  });

  it.skipIf(!hasCurl)(
    "copy as curl replays the attempt as sent: the replica that answered gets the same path, headers and bytes (the backend's key a variable the user sets), and answers what the attempt got",
    async () => {
      const backendKey = 'sk-backend-0123456789';
      // Two replicas of one upstream whose URL has a path, both asking for the key.
      const sims = [
        await createSimulator({ personality: 'llama-server', apiKey: backendKey }),
        await createSimulator({ personality: 'llama-server', apiKey: backendKey }),
      ];
      replicas = sims;
      stack = await startStack({
        env: {
          TOOLPROOF_UPSTREAM_URL: sims.map((x) => x.url).join(','),
          TOOLPROOF_UPSTREAM_API_KEY: backendKey,
        },
      });
      // The simulator answers a scenario named by its header: without it, another answer.
      const leak = scenario({ raw: LEAKED }, { 'x-conversation-id': 'conv-7' }).headers;
      const ids: string[] = [];
      for (const stream of [false, true]) {
        const res = await fetch(`${stack.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...leak },
          // A client's pretty-printed body is forwarded as it came (no policy rewrote it: no tools).
          body: stream
            ? JSON.stringify({ model: 'sim', messages: user, tools, stream })
            : JSON.stringify({ model: 'sim', messages: user }, null, 2),
        });
        await res.text();
        ids.push(res.headers.get('x-request-id')!);
      }
      /** What a backend tells apart in a request: its path, its headers but the transport's, its bytes. */
      const asReceived = (r: RecordedRequest) => {
        const { host: _h, 'content-length': _l, connection: _c, ...headers } = r.headers;
        return { method: r.method, path: r.path, headers, body: r.rawBody };
      };
      /** An answer's content without what differs every time (ids, times). */
      const answerOf = (text: string, stream: boolean) =>
        stream
          ? text
              .split('\n')
              .map((l) => l.replace(/^data: /, '').trim())
              .filter((l) => l.startsWith('{'))
              .map((l) => JSON.stringify((JSON.parse(l) as { choices?: unknown }).choices ?? null))
          : (JSON.parse(text) as { choices: unknown }).choices;
      for (const [i, id] of ids.entries()) {
        const stream = i === 1;
        const view = (await getJson(stack, `/inspect/api/requests/${id}`)).body as {
          record: { upstreamAttempts: Array<{ request: { text: string }; response: { text: string } }> };
          curl: string[];
        };
        const curl = view.curl[0]!;
        expect(curl).not.toContain(backendKey);
        const answered = sims.find((x) => x.requests.some((r) => r.headers['x-request-id'] === id))!;
        const sent = answered.requests.find((r) => r.headers['x-request-id'] === id)!;
        // Without the key set the command says so and sends nothing.
        const bare = await execFileAsync('bash', ['-c', curl], { encoding: 'utf8', timeout: 10_000 }).catch(
          (e: { code: number; stderr: string }) => e,
        );
        expect((bare as { code: number }).code).not.toBe(0);
        expect((bare as { stderr: string }).stderr).toContain('TOOLPROOF_UPSTREAM_API_KEY');
        const counts = sims.map((x) => x.requests.length);
        // The command as the page copies it, run by a shell (not synchronously: the simulators
        // answering it run in this process), with the key the user sets.
        const run = await execFileAsync('bash', ['-c', curl], {
          encoding: 'utf8',
          timeout: 10_000,
          env: { ...process.env, TOOLPROOF_UPSTREAM_API_KEY: backendKey },
        });
        // One request, to the replica that answered the attempt.
        expect(sims.map((x) => x.requests.length - counts[sims.indexOf(x)]!)).toEqual(
          sims.map((x) => (x === answered ? 1 : 0)),
        );
        const replayed = answered.requests.at(-1)!;
        const exact = asReceived(replayed);
        // The here-document's closing newline: dropped for a body of one line (the bytes as
        // sent), added to a client's pretty-printed body.
        if (!stream) exact.body = exact.body.replace(/\n$/, '');
        expect(exact).toEqual(asReceived(sent));
        expect(sent.headers['x-sim-scenario']).toBeDefined();
        expect(sent.headers['x-conversation-id']).toBe('conv-7');
        expect(sent.headers.authorization).toBe(`Bearer ${backendKey}`);
        if (stream) expect(curl).toMatch(/^curl -sS -N /m);
        // What the backend answered the replay is what it answered the attempt.
        expect(answerOf(run.stdout, stream)).toEqual(
          answerOf(view.record.upstreamAttempts[0]!.response.text, stream),
        );
        if (stream) expect(run.stdout.trimEnd()).toMatch(/data: \[DONE\]$/);
        else expect(JSON.parse(run.stdout).object).toBe('chat.completion');
      }
    },
  );

  it('copy as curl of a request whose id a later one reused sends the id it was sent with, not its suffixed one', async () => {
    stack = await startStack();
    for (let i = 0; i < 2; i++)
      await stack.client.chat.completions.create(
        { model: 'sim', messages: user },
        { headers: { 'x-request-id': 'dup-1', 'x-sim-scenario': 'prose' } },
      );
    const ids = ((await getJson(stack, '/inspect/api/requests')).body.requests as Summary[]).map((r) => r.id);
    const earlier = ids.find((id) => id.startsWith('dup-1~'))!;
    expect(ids).toEqual(['dup-1', earlier]);
    const view = (await getJson(stack, `/inspect/api/requests/${encodeURIComponent(earlier)}`)).body as {
      record: { upstreamAttempts: Array<{ headers: Record<string, string> }> };
      curl: string[];
    };
    expect(view.record.upstreamAttempts[0]!.headers['x-request-id']).toBe('dup-1');
    expect(view.curl[0]).toContain(`-H 'x-request-id: dup-1' \\`);
    expect(view.curl[0]).not.toContain(`x-request-id: ${earlier}`);
  });

  it('is documented in the OpenAPI document', async () => {
    stack = await startStack();
    const doc = (await getJson(stack, '/docs/json')).body as { paths: Record<string, unknown> };
    for (const p of [
      '/inspect/api/requests',
      '/inspect/api/requests/{id}',
      '/inspect/api/sessions',
      '/inspect/api/session',
    ])
      expect(doc.paths[p], p).toBeDefined();
    expect(doc.paths['/inspect']).toBeUndefined();
  });

  it("documents each answer's fields: every answer valid against its OpenAPI schema, every field it holds named there", async () => {
    // A script reads the API by its OpenAPI document: the request, the session and the sessions
    // answered "Default Response" with no shape, and a summary's status and tokens were unnamed.
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const session = { 'x-session-affinity': 'documented-1' };
    const res = await stack.client.chat.completions
      .create({ model: 'sim', messages: user, tools }, scenario({ raw: LEAKED }, session))
      .withResponse();
    const id = res.response.headers.get('x-request-id')!;
    await stack.client.chat.completions.create(
      {
        model: 'sim',
        messages: [...user, { role: 'assistant', content: 'Sunny.' }, { role: 'user', content: 'Tomorrow?' }],
      },
      scenario({ say: 'Rain.' }, session),
    );
    await collectStream(
      await stack.client.chat.completions.create(
        { model: 'sim', messages: user, tools, stream: true },
        scenario([{ say: 'no' }, { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }]),
      ),
    );
    const failed = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'documented-failed',
        ...scenario({ error: { status: 500, message: 'CUDA out of memory' } }).headers,
      },
      body: JSON.stringify({ model: 'sim', messages: user, tools }),
    });
    expect(failed.status).toBe(500);
    const doc = (await getJson(stack, '/docs/json')).body as {
      paths: Record<
        string,
        { get: { responses: Record<string, { content?: Record<string, { schema: unknown }> }> } }
      >;
    };
    const ajv = new Ajv({ strict: false, allErrors: true });
    /** Every field of `value` that its schema does not name, as paths. */
    const unnamed = (value: unknown, schema: Record<string, unknown> | undefined, path: string): string[] => {
      if (!schema || value === null || typeof value !== 'object') return [];
      if (Array.isArray(value))
        return value.flatMap((v, i) => unnamed(v, schema.items as Record<string, unknown>, `${path}[${i}]`));
      const props = schema.properties as Record<string, Record<string, unknown>> | undefined;
      if (!props) return [];
      return Object.entries(value).flatMap(([k, v]) =>
        k in props ? unnamed(v, props[k], `${path}.${k}`) : [`${path}.${k}`],
      );
    };
    const sessionPath = `/inspect/api/session?key=${encodeURIComponent('h:documented-1')}`;
    for (const [route, path] of [
      ['/inspect/api/requests', '/inspect/api/requests'],
      ['/inspect/api/requests/{id}', `/inspect/api/requests/${id}`],
      ['/inspect/api/requests/{id}', '/inspect/api/requests/documented-failed'],
      ['/inspect/api/sessions', '/inspect/api/sessions'],
      ['/inspect/api/session', sessionPath],
      // A bug report's file: one request, one session (tests/e2e/inspect-export.test.ts).
      ['/inspect/api/requests/{id}/export', `/inspect/api/requests/${id}/export`],
      ['/inspect/api/session/export', sessionPath.replace('/session?', '/session/export?')],
    ] as const) {
      const schema = doc.paths[route]!.get.responses['200']?.content?.['application/json']?.schema as
        | Record<string, unknown>
        | undefined;
      expect(schema, route).toBeDefined();
      const { status, body } = await getJson(stack, path);
      expect(status, route).toBe(200);
      const validate = ajv.compile(schema!);
      expect(validate(body), `${route}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(unnamed(body, schema, route), route).toEqual([]);
    }
    // The session's two turns, the second continuing the first.
    const turns = (await getJson(stack, sessionPath)).body.turns as unknown[];
    expect(turns).toHaveLength(2);
  });

  it('cuts bodies at TOOLPROOF_CAPTURE_BODY_KB and keeps nothing with TOOLPROOF_CAPTURE_MB=0', async () => {
    stack = await startStack({ env: { TOOLPROOF_CAPTURE_BODY_KB: '1' } });
    const long = [{ role: 'user' as const, content: 'x'.repeat(5000) }];
    await stack.client.chat.completions.create({ model: 'sim', messages: long });
    const [r] = (await getJson(stack, '/inspect/api/requests')).body.requests as Summary[];
    const view = (await getJson(stack, `/inspect/api/requests/${r!.id}`)).body as {
      record: { clientRequest: { body: { text: string; cut: number } } };
    };
    expect(view.record.clientRequest.body.text.length).toBe(1024);
    expect(view.record.clientRequest.body.cut).toBeGreaterThan(3900);
    await stack.close();

    stack = await startStack({ env: { TOOLPROOF_CAPTURE_MB: '0' } });
    await stack.client.chat.completions.create({ model: 'sim', messages: user });
    const off = (await getJson(stack, '/inspect/api/requests')).body;
    expect(off.capture).toBe(false);
    expect(off.requests).toEqual([]);
    expect(stack.app.toolproof.capture).toBeUndefined();
  });

  it('an upstream that cannot be reached: the attempt has its error and the time it took, and no TTFB', async () => {
    // A port nothing listens on: bound, then closed.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${port}/v1` });
    try {
      const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'down-1' },
        body: JSON.stringify({ model: 'm1', messages: user, tools, stream: true }),
      });
      expect(res.status).toBe(502);
      await res.text();
      const view = (await (await fetch(`${proxy.origin}/inspect/api/requests/down-1`)).json()) as {
        record: { upstreamAttempts: Array<{ ttfbMs?: number; totalMs?: number; error?: { code: string } }> };
      };
      const [attempt] = view.record.upstreamAttempts;
      expect(attempt!.error?.code).toBe('TP_ERR_UPSTREAM_UNREACHABLE');
      expect(attempt!.totalMs).toBeTypeOf('number');
      // No response headers ever came: a TTFB would say the backend answered.
      expect(attempt!.ttfbMs).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it('shows a request in flight, then its end', async () => {
    stack = await startStack();
    const pending = stack.client.chat.completions.create(
      { model: 'sim', messages: user, stream: true },
      scenario({ say: 'slow answer', chunkDelayMs: 150 }),
    );
    const stream = await pending;
    let inFlight: Summary[] = [];
    for (let i = 0; i < 20 && inFlight.length === 0; i++) {
      inFlight = (await getJson(stack, '/inspect/api/requests?outcome=in_flight')).body.requests as Summary[];
      if (inFlight.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(inFlight).toHaveLength(1);
    await collectStream(stream);
    await new Promise((r) => setTimeout(r, 50));
    const [done] = (await getJson(stack, '/inspect/api/requests')).body.requests as Summary[];
    expect(done!.outcome).toBe('clean');
    expect(done!.status).toBe(200);
  });
});
