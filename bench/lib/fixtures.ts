/**
 * The request bodies the bench sends, and what the fake upstream answers (shared with
 * fake-upstream.ts so the checks in run.ts know what to expect). Bodies are serialized once with
 * JSON.stringify (no spaces: the fake upstream looks for `"stream":true` and `"tools":[`).
 */

import { readFileSync } from 'node:fs';

export const MODEL = 'bench-model';
export const STREAM_CHUNKS = 50;
export const FINAL_ANSWER_TEXT = 'The weather in Paris is 18 degrees and sunny.';
export const PLAIN_ANSWER_TEXT = 'Hello! How can I help you today?';

/** A chat request without tools, about 300 bytes: nothing for the policies to do. */
export function smallBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are a concise assistant. Answer in one sentence.' },
        {
          role: 'user',
          content:
            'Hi there! Could you tell me, in a friendly way, what you can help me with today? Keep it short.',
        },
      ],
      temperature: 0.2,
      max_tokens: 64,
    }),
  );
}

/**
 * How the fake upstream streams, told by markers in the last user message (it looks for
 * `BENCH-` in a streamed request's body): `BENCH-CHUNKS-<n>` events instead of STREAM_CHUNKS;
 * `BENCH-TRICKLE` one event every TRICKLE_MS (a model generating) instead of all at once, each
 * event a write of its own (`BENCH-TICK-<ms>`: every <ms> instead);
 * `BENCH-HOLD` the first events, then nothing until GET /bench/release (streams held open);
 * `BENCH-HOLD-AFTER-<n>` holds after n events instead of the first few (a stream that has
 * already produced a long output when it waits).
 */
export interface StreamShape {
  chunks?: number;
  mode?: 'burst' | 'trickle' | 'hold';
  /** With mode 'hold': the events sent before holding (default a few). */
  holdAfter?: number;
  /** With mode 'trickle': ms between events (default TRICKLE_MS). */
  tickMs?: number;
}
export const TRICKLE_MS = 50;
/**
 * The paced agent turn's ms between events (bench/run.ts, A/B workload `paced`). llama-server and
 * vLLM write each token's event as its own write as the token is decoded: one HTTP chunk per
 * event in /work/shared/wire's llama-server recordings (raw_wire_received of the disconnect
 * cases), 0.5-5 ms apart on its tiny CPU models (the `timings` of the streamed tool calls:
 * predicted_per_token_ms), tens of ms on real models. 2 ms compresses that and still reaches the
 * proxy as about one read per event (the A/B prints reads per request to check it; strace of
 * toolproof at load ~20, 7 December 2026, 16 turns at c=8: its upstream sockets read 1,383 times,
 * ~86 a paced turn of 101 events and the end, against ~1.2 a burst one).
 */
export const PACED_MS = 2;

function marker(shape: StreamShape): string {
  const parts: string[] = [];
  if (shape.chunks !== undefined) parts.push(`BENCH-CHUNKS-${shape.chunks}`);
  if (shape.mode === 'trickle') parts.push('BENCH-TRICKLE');
  if (shape.mode === 'hold') parts.push('BENCH-HOLD');
  if (shape.holdAfter !== undefined) parts.push(`BENCH-HOLD-AFTER-${shape.holdAfter}`);
  if (shape.tickMs !== undefined) parts.push(`BENCH-TICK-${shape.tickMs}`);
  return parts.length ? ` [${parts.join(' ')}]` : '';
}

/**
 * The small request, streamed (50 chunks unless `shape` says otherwise). Its `max_tokens` covers
 * the events asked for (a stream of more events than 2 x max_tokens + 64 is an upstream that did
 * not stop where it was asked to, which toolproof ends with an error since redteam27).
 */
export function streamBody(shape: StreamShape = {}): Buffer {
  const body = JSON.parse(smallBody().toString()) as {
    messages: { role: string; content: string }[];
    max_tokens: number;
  };
  const messages = body.messages.map((m, i) =>
    i === body.messages.length - 1 ? { ...m, content: m.content + marker(shape) } : m,
  );
  const max_tokens = Math.max(body.max_tokens, shape.chunks ?? 0);
  return Buffer.from(JSON.stringify({ ...body, messages, max_tokens, stream: true }));
}

/**
 * A streamed request with ONE tool declared and no tool_choice: toolproof forces final_answer;
 * the fake upstream streams a final_answer call whose arguments arrive one token per event, and
 * toolproof validates them and turns them into live content deltas.
 */
export function toolsStreamBody(shape: StreamShape = {}): Buffer {
  const body = JSON.parse(toolsBody().toString()) as {
    messages: { role: string; content: string }[];
    tools: unknown[];
  };
  const messages = body.messages.map((m, i) =>
    i === body.messages.length - 1 ? { ...m, content: m.content + marker(shape) } : m,
  );
  return Buffer.from(JSON.stringify({ ...body, messages, tools: body.tools.slice(0, 1), stream: true }));
}

/**
 * The events of a streamed final_answer call of `chunks` events: the call's header, `{"answer":"`,
 * one token per event, `"}` with finish_reason tool_calls. Returns the argument pieces (one per
 * event) and the answer text toolproof should stream as content.
 */
export function finalAnswerPieces(chunks: number): { pieces: string[]; answer: string } {
  const tokens: string[] = [];
  for (let i = 2; i < chunks - 1; i++) tokens.push(`tok${i} `);
  return { pieces: ['', '{"answer":"', ...tokens, '"}'], answer: tokens.join('') };
}

/** The content of a plain stream of `chunks` events. */
export function plainStreamText(chunks: number): string {
  let text = '';
  for (let i = 0; i < chunks; i++) text += `tok${i} `;
  return text;
}

/**
 * A long conversation of about `targetBytes` (default 200 KB): alternating user / assistant
 * messages of about 400 characters each, no tools, non-streaming.
 */
export function historyBody(targetBytes = 200 * 1024): Buffer {
  const filler =
    'Here is some more context about the project: the build uses TypeScript, the tests run with vitest, and the ' +
    'deployment goes through a container image with a health check. We discussed caching, retries and timeouts ' +
    'at length, and agreed that latency matters more than throughput for the interactive path. ';
  const messages: { role: string; content: string }[] = [
    { role: 'system', content: 'You are a helpful engineering assistant.' },
  ];
  let size = 200;
  for (let i = 0; size < targetBytes; i++) {
    const content = `(${i}) ${filler}`;
    messages.push({ role: i % 2 === 0 ? 'user' : 'assistant', content });
    size += content.length + 32;
  }
  messages.push({ role: 'user', content: 'Summarize the discussion in one paragraph.' });
  return Buffer.from(JSON.stringify({ model: MODEL, messages, max_tokens: 256 }));
}

/**
 * A chat request WITH tools and no tool_choice: toolproof forces tool use (adds final_answer,
 * tool_choice "required"), then unwraps the upstream's final_answer call into content, validates
 * the arguments, and runs leak recovery / normalization on the way back.
 */
export function toolsBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are a weather assistant. Use the tools when they help.' },
        { role: 'user', content: 'What is the weather in Paris right now?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city.',
            parameters: {
              type: 'object',
              properties: {
                city: { type: 'string', description: 'City name, e.g. Paris' },
                unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
              },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
        {
          type: 'function',
          function: {
            name: 'search_web',
            description: 'Search the web and return the top results.',
            parameters: {
              type: 'object',
              properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 10 } },
              required: ['query'],
            },
          },
        },
      ],
      temperature: 0.2,
    }),
  );
}

/** The tool the agent turn's answer calls, and the argument its tokens stream into. */
export const AGENT_CALL = { name: 'run_shell_command', param: 'command' } as const;
/** Events of the agent turn's streamed tool call (a command of ~100 tokens). */
export const AGENT_TURN_EVENTS = 100;

/**
 * A real agent turn, as an agent sends it: Qwen Code 0.24.4's second request of a tests/agents
 * run (tests/fixtures/agents/qwen/02-POST-v1-chat-completions.json: its 14 tools with their real
 * schemas, its 27 KB system prompt, the 10 KB user turn with the project context, a write_file
 * call and its result), with two more turns of history of the same shape (a shell command and a
 * file read with their outputs, generated here) so the body is ~90 KB, the model renamed to the
 * bench's and, in the last tool result, the fake upstream's markers: it answers with a streamed
 * call to `run_shell_command` of `events` events (toolproof forces tool use, validates the call
 * against its schema and streams it on), in one burst or as `shape` says (`{ mode: 'trickle',
 * tickMs: PACED_MS }`: one event a write, paced as a backend decodes). `headers`: the recorded
 * request's own, less those of the connection, with the bench's key.
 */
export function agentTurn(
  events = AGENT_TURN_EVENTS,
  shape: Pick<StreamShape, 'mode' | 'tickMs'> = {},
): { body: Buffer; headers: Record<string, string> } {
  const file = new URL('../../tests/fixtures/agents/qwen/02-POST-v1-chat-completions.json', import.meta.url);
  const rec = JSON.parse(readFileSync(file, 'utf8')) as {
    headers: Record<string, string>;
    body: { messages: Array<Record<string, unknown>>; [k: string]: unknown };
  };
  const lines = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join('\n');
  const turn = (id: string, name: string, args: object, output: string) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    },
    { role: 'tool', tool_call_id: id, content: [{ type: 'text', text: output }] },
  ];
  const history = [
    ...turn(
      'chatcmpl-tool-bench-0002',
      'run_shell_command',
      { command: 'npm test -- --reporter=dot', description: 'Run the test suite' },
      lines(
        60,
        (i) =>
          ` ✓ tests/unit/module-${i}.test.ts (${(i * 7) % 23} tests) ${(i * 13) % 97}ms  src/module-${i}.ts covered`,
      ),
    ),
    ...turn(
      'chatcmpl-tool-bench-0003',
      'read_file',
      { absolute_path: '/tmp/tp-qwen-work-PNqq1j/src/server.ts' },
      lines(
        70,
        (i) =>
          `${String(i + 1).padStart(4)}  export function handler${i}(req: Request, res: Response): void { res.json({ ok: true, at: ${i} }); }`,
      ),
    ),
  ];
  const messages = [...rec.body.messages, ...history];
  const last = messages.at(-1) as { content: Array<{ text: string }> };
  // The burst turn's markers exactly as before (its body is the judged reference); a shape's after them.
  const paced = marker(shape);
  last.content[0]!.text +=
    ` [BENCH-CHUNKS-${events} BENCH-CALL-${AGENT_CALL.name}.${AGENT_CALL.param}${paced ? ` ${paced.slice(2, -1)}` : ''}]`;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec.headers))
    if (!['host', 'connection', 'content-length', 'accept-encoding'].includes(k)) headers[k] = v;
  headers.authorization = 'Bearer sk-bench';
  return {
    body: Buffer.from(JSON.stringify({ ...rec.body, model: MODEL, messages, stream: true })),
    headers,
  };
}
