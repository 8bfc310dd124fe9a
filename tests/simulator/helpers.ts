/** Small HTTP and SSE helpers for the simulator tests (real sockets on 127.0.0.1). */
import type { Simulator } from '../../simulator/index.js';

type Obj = Record<string, unknown>;

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Obj;
}

export const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather for a city.',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['location', 'unit'],
    },
  },
};

export const FINAL_ANSWER_TOOL = {
  type: 'function',
  function: {
    name: 'final_answer',
    description: 'Give the final answer.',
    parameters: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
  },
};

/** The x-sim-scenario header; non-ASCII scenarios go base64 (header values are Latin-1). */
export function scenarioHeader(scenario: unknown): Record<string, string> {
  const text = typeof scenario === 'string' ? scenario : JSON.stringify(scenario);
  const ascii = /^[\x20-\x7e]*$/.test(text);
  return { 'x-sim-scenario': ascii ? text : `b64:${Buffer.from(text).toString('base64')}` };
}

export async function post(
  sim: Simulator,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Obj = {};
  try {
    json = JSON.parse(text) as Obj;
  } catch {
    // SSE or empty body: callers use `text`.
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function chat(sim: Simulator, body: Obj, headers: Record<string, string> = {}): Promise<Reply> {
  return post(sim, '/chat/completions', { model: 'simulated-model', ...body }, headers);
}

export function sseEvents(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((b) => b !== '')
    .map((b) => {
      if (!b.startsWith('data: ')) throw new Error(`bad SSE block: ${b}`);
      const data = b.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

export interface Accumulated {
  role: unknown;
  content: string | null;
  reasoning: string | null;
  calls: Array<{ id: string; name: string; arguments: string }>;
  finish: unknown;
  usage: unknown;
}

/** Folds streamed deltas into one message, the way an OpenAI client does. */
export function accumulate(events: unknown[]): Accumulated {
  const out: Accumulated = {
    role: undefined,
    content: null,
    reasoning: null,
    calls: [],
    finish: null,
    usage: null,
  };
  for (const e of events) {
    if (e === '[DONE]' || typeof e !== 'object' || e === null) continue;
    const chunk = e as Obj;
    if (chunk.usage) out.usage = chunk.usage;
    const choice = (chunk.choices as Obj[] | undefined)?.[0];
    if (!choice) continue;
    if (choice.finish_reason) out.finish = choice.finish_reason;
    const d = (choice.delta ?? {}) as Obj;
    if (d.role) out.role = d.role;
    if (typeof d.content === 'string') out.content = (out.content ?? '') + d.content;
    if (typeof d.reasoning_content === 'string') out.reasoning = (out.reasoning ?? '') + d.reasoning_content;
    for (const tc of (d.tool_calls as Obj[] | undefined) ?? []) {
      const i = tc.index as number;
      out.calls[i] ??= { id: '', name: '', arguments: '' };
      const call = out.calls[i];
      const fn = (tc.function ?? {}) as Obj;
      if (typeof tc.id === 'string') call.id = tc.id;
      if (typeof fn.name === 'string') call.name = fn.name;
      if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
    }
  }
  return out;
}

export function messageOf(reply: Reply): Obj {
  return ((reply.json.choices as Obj[])[0] as Obj).message as Obj;
}
