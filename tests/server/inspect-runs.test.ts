/**
 * The inspector's sessions for agents that name none (Continue CLI, Cline, Grok CLI): two runs
 * of the same task open alike (the same system prompt, the same first user message), so the
 * hash of their opening messages is one; the inspector still shows each run as a session of its
 * own, its turns in order, whether the runs followed each other or ran interleaved, on every door
 * (docs/inspect.md, "Sessions"). Real server, real HTTP, the simulator behind it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator } from '../../simulator/index.js';
import { type Stack, startStack } from './stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const SYSTEM = 'You are a coding agent. Use the tools.';
const TASK = 'What is the weather in Paris?';
const PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
};

type Door = 'chat' | 'messages' | 'responses';

/** One agent run on one door: its conversation so far, and the request id of each turn sent. */
interface Run {
  door: Door;
  history: unknown[];
  ids: string[];
  headers: Record<string, string>;
}

function newRun(door: Door, headers: Record<string, string> = {}): Run {
  const history: unknown[] =
    door === 'chat'
      ? [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: TASK },
        ]
      : door === 'messages'
        ? [{ role: 'user', content: TASK }]
        : [
            { role: 'developer', content: SYSTEM },
            { role: 'user', content: TASK },
          ];
  return { door, history, ids: [], headers };
}

/** The body of the run's next request (every turn re-sends the whole conversation). */
function bodyOf(run: Run): Record<string, unknown> {
  if (run.door === 'chat')
    return {
      model: 'sim',
      messages: run.history,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: PARAMETERS } }],
    };
  if (run.door === 'messages')
    return {
      model: 'sim',
      max_tokens: 200,
      system: SYSTEM,
      messages: run.history,
      tools: [{ name: 'get_weather', input_schema: PARAMETERS }],
    };
  return {
    model: 'sim',
    input: run.history,
    tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS }],
  };
}

const PATHS: Record<Door, string> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  responses: '/v1/responses',
};

async function send(s: Stack, run: Run, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${s.origin}${PATHS[run.door]}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-sim-scenario': 'tools',
      ...run.headers,
    },
    body: JSON.stringify(body),
  });
}

/** One turn: the request, then the reply and a tool result appended, as an agent does. */
async function turn(s: Stack, run: Run): Promise<void> {
  const res = await send(s, run, bodyOf(run));
  expect(res.status).toBe(200);
  run.ids.push(res.headers.get('x-request-id')!);
  const reply = (await res.json()) as Record<string, unknown>;
  if (run.door === 'chat') {
    const msg = (reply.choices as Array<{ message: { tool_calls?: Array<{ id: string }> } }>)[0]!.message;
    run.history.push(msg);
    run.history.push(
      msg.tool_calls?.length
        ? { role: 'tool', tool_call_id: msg.tool_calls[0]!.id, content: 'sunny, 21 C' }
        : { role: 'user', content: 'And tomorrow?' },
    );
  } else if (run.door === 'messages') {
    const content = reply.content as Array<{ type: string; id?: string }>;
    run.history.push({ role: 'assistant', content });
    const use = content.find((b) => b.type === 'tool_use');
    run.history.push({
      role: 'user',
      content: use ? [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 C' }] : 'And tomorrow?',
    });
  } else {
    const output = reply.output as Array<{ type: string; call_id?: string }>;
    run.history.push(...output);
    const call = output.find((o) => o.type === 'function_call');
    run.history.push(
      call
        ? { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }
        : { role: 'user', content: 'And tomorrow?' },
    );
  }
}

const getJson = async <T>(s: Stack, path: string): Promise<T> => {
  const res = await fetch(`${s.origin}${path}`);
  expect(res.status).toBe(200);
  return (await res.json()) as T;
};

/**
 * What a user of the inspector sees: each run ONE session of its own (the list, the sessions,
 * the session view and the filter), its turns in order, no other request in it.
 */
async function expectOwnSessions(s: Stack, runs: Run[]): Promise<string[]> {
  const { requests } = await getJson<{ requests: Array<{ id: string; session: string }> }>(
    s,
    '/inspect/api/requests?limit=1000',
  );
  const { sessions } = await getJson<{ sessions: Array<{ session: string; requests: number }> }>(
    s,
    '/inspect/api/sessions',
  );
  const labels: string[] = [];
  for (const run of runs) {
    const own = [...new Set(requests.filter((q) => run.ids.includes(q.id)).map((q) => q.session))];
    expect(own, JSON.stringify(requests)).toHaveLength(1);
    const label = own[0]!;
    // The opening's hash (the affinity key's label), then the run's own mark.
    expect(label).toMatch(/^o:sim\/\/\d+\.\d+\/[0-9a-f]{8}$/);
    const key = encodeURIComponent(label);
    const view = await getJson<{ turns: Array<{ summary: { id: string } }> }>(
      s,
      `/inspect/api/session?key=${key}`,
    );
    expect(view.turns.map((t) => t.summary.id)).toEqual(run.ids);
    const filtered = await getJson<{ requests: Array<{ id: string }> }>(
      s,
      `/inspect/api/requests?session=${key}&limit=1000`,
    );
    expect(filtered.requests.map((q) => q.id).reverse()).toEqual(run.ids);
    expect(sessions.find((x) => x.session === label)?.requests).toBe(run.ids.length);
    labels.push(label);
  }
  expect(new Set(labels).size).toBe(runs.length);
  // Both runs share the opening's hash: only the run's mark differs.
  const openings = new Set(labels.map((l) => l.slice(0, l.lastIndexOf('/'))));
  expect(openings.size).toBe(1);
  return labels;
}

describe('the inspector: runs that open alike, for agents that name no session', () => {
  for (const door of ['chat', 'messages', 'responses'] as const) {
    it(`${door}: two runs one after the other, three turns each, two sessions`, async () => {
      stack = await startStack({ sim: { personality: 'llama-server' } });
      const a = newRun(door);
      const b = newRun(door);
      for (let i = 0; i < 3; i++) await turn(stack, a);
      for (let i = 0; i < 3; i++) await turn(stack, b);
      await expectOwnSessions(stack, [a, b]);
    });

    it(`${door}: two runs interleaved, three turns each, two sessions, each in its order`, async () => {
      stack = await startStack({ sim: { personality: 'vllm' } });
      const a = newRun(door);
      const b = newRun(door);
      for (let i = 0; i < 3; i++) {
        await turn(stack, a);
        await turn(stack, b);
      }
      await expectOwnSessions(stack, [a, b]);
    });
  }

  it('two runs started at once (their first requests in flight together) are still two sessions', async () => {
    stack = await startStack({ sim: { personality: 'vllm' } });
    const s = stack;
    const a = newRun('chat');
    const b = newRun('chat');
    for (let i = 0; i < 3; i++) await Promise.all([turn(s, a), turn(s, b)]);
    await expectOwnSessions(s, [a, b]);
  });

  it('a turn the client sends again (a retry) stays in its run', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const a = newRun('chat');
    const b = newRun('chat');
    await turn(stack, a);
    await turn(stack, b);
    // Run a's second turn sent twice (the client did not get the first answer), as it is.
    const again = bodyOf(a);
    const first = await send(stack, a, again);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    a.ids.push(first.headers.get('x-request-id')!);
    await turn(stack, a);
    await turn(stack, b);
    await turn(stack, a);
    await expectOwnSessions(stack, [a, b]);
    expect(a.ids).toHaveLength(4);
  });

  it('a first turn that failed and was sent again is in the run of its retry; one never sent again, a session of its own', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const a = newRun('chat');
    const b = newRun('chat');
    const failing = {
      ...a,
      headers: {
        'x-sim-scenario': JSON.stringify({ error: { status: 500, message: 'CUDA out of memory' } }),
      },
    };
    const fail = async (run: Run) => {
      const res = await send(stack!, { ...run, headers: failing.headers }, bodyOf(run));
      expect(res.status).toBe(500);
      await res.arrayBuffer();
      run.ids.push(res.headers.get('x-request-id')!);
    };
    // Run b's first turn fails twice, run a's turns in between: b's retry starts its run.
    await turn(stack, a);
    await fail(b);
    await turn(stack, a);
    await fail(b);
    for (let i = 0; i < 3; i++) await turn(stack, b);
    await fail(a);
    await turn(stack, a);
    const labels = await expectOwnSessions(stack, [a, b]);
    expect(b.ids).toHaveLength(5);
    // Another run's first turn fails and the agent gives up: alone, in no other run.
    const c = newRun('chat');
    await fail(c);
    await turn(stack, b);
    expect(await expectOwnSessions(stack, [a, b, c])).toEqual([...labels, expect.any(String)]);
  });

  it('with several replicas, runs that open alike keep going to one replica (routing unchanged), and are two sessions', async () => {
    const sims = await Promise.all([0, 1, 2].map(() => createSimulator({ personality: 'vllm' })));
    try {
      stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: sims.map((x) => x.url).join(',') } });
      const s = stack;
      for (const door of ['chat', 'messages'] as const) {
        const a = newRun(door);
        const b = newRun(door);
        for (let i = 0; i < 3; i++) {
          await turn(s, a);
          await turn(s, b);
        }
        await expectOwnSessions(s, [a, b]);
        const replicas = new Set<string>();
        for (const id of [...a.ids, ...b.ids]) {
          const view = await getJson<{ record: { upstreamAttempts: Array<{ replica?: string }> } }>(
            s,
            `/inspect/api/requests/${id}`,
          );
          replicas.add(String(view.record.upstreamAttempts[0]!.replica));
        }
        expect([...replicas]).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/)]);
      }
    } finally {
      await stack?.close();
      stack = undefined;
      await Promise.all(sims.map((x) => x.close()));
    }
  });

  it('a session the client names is never split: a restarted conversation goes on in it', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const headers = { 'x-session-id': 'named-run-1' };
    const a = newRun('chat', headers);
    const b = newRun('chat', headers);
    for (let i = 0; i < 3; i++) await turn(stack, a);
    for (let i = 0; i < 3; i++) await turn(stack, b);
    const { sessions } = await getJson<{ sessions: Array<{ session: string; requests: number }> }>(
      stack,
      '/inspect/api/sessions',
    );
    expect(sessions).toEqual([expect.objectContaining({ session: 'h:named-run-1', requests: 6 })]);
    const view = await getJson<{ turns: Array<{ summary: { id: string } }> }>(
      stack,
      `/inspect/api/session?key=${encodeURIComponent('h:named-run-1')}`,
    );
    expect(view.turns.map((t) => t.summary.id)).toEqual([...a.ids, ...b.ids]);
  });
});
