/**
 * Per-chunk CPU of the policy stream chain alone (no sockets): a forced final answer streamed
 * as N argument deltas through every response hook, as the stream driver runs them: every event
 * parsed (the full path) against the fast lane (server/chat/fast-lane.ts), interleaved.
 * `npx tsx bench/chain-micro.ts [chunks] [--no-light=policy,...] [--single-call]`
 *   --no-light   those policies' stream hooks run without their onLight half (as if they had
 *                none: the chain takes the full path from that hook on), to measure what a
 *                hook's fast-lane half earns. `all`: every policy.
 *   --single-call  the client sends parallel_tool_calls: false (client-constraints' hook runs).
 */
import { performance } from 'node:perf_hooks';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS } from '../protocol/settings.js';
import { POLICIES } from '../policies/registry.js';
import { createFastLane } from '../server/chat/fast-lane.js';
import { activePolicies, createStreamChain, runRequestPolicies } from '../policies/composition.js';
import { isPassThroughHook, type Policy, type StreamHook } from '../policies/types.js';

const args = process.argv.slice(2);
const n = Number(args.find((a) => !a.startsWith('--')) ?? 500);
const noLight = new Set(
  (args.find((a) => a.startsWith('--no-light='))?.slice('--no-light='.length) ?? '')
    .split(',')
    .filter(Boolean),
);
const singleCall = args.includes('--single-call');
const original: ChatCompletionRequest = {
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    },
  ],
  stream: true,
  ...(singleCall ? { parallel_tool_calls: false } : {}),
};

/** The hook without its onLight half (a pass-through hook stays itself: the chain leaves it out). */
function withoutLight(hook: StreamHook): StreamHook {
  if (isPassThroughHook(hook) || !hook.onLight) return hook;
  const plain: StreamHook = { onChunk: (c) => hook.onChunk(c), onEnd: () => hook.onEnd() };
  if (hook.unrecoverable) plain.unrecoverable = () => hook.unrecoverable!();
  return plain;
}

const policies = activePolicies(POLICIES, DEFAULT_MODEL_SETTINGS).map((p): Policy => {
  const create = p.createStreamHook?.bind(p);
  if (!create || !(noLight.has('all') || noLight.has(p.name))) return p;
  return { ...p, createStreamHook: (...a) => withoutLight(create(...a)) } as Policy;
});
const ctx = {
  model: 'm',
  settings: DEFAULT_MODEL_SETTINGS,
  requiredRejected: false,
  attempt: 0,
  retriesUsed: 0,
  attemptEffects: [],
};
const phase = runRequestPolicies(policies, original, ctx);
const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk' as const, created: 1, model: 'm' };
const payloads: string[] = [
  JSON.stringify({
    ...base,
    choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
  }),
  JSON.stringify({
    ...base,
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            {
              index: 0,
              id: 'c1',
              type: 'function',
              function: { name: 'final_answer', arguments: '{"answer": "' },
            },
          ],
        },
        finish_reason: null,
      },
    ],
  }),
];
for (let i = 0; i < n; i++)
  payloads.push(
    JSON.stringify({
      ...base,
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: 'word ' } }] },
          finish_reason: null,
        },
      ],
    }),
  );
payloads.push(
  JSON.stringify({
    ...base,
    choices: [
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"}' } }] }, finish_reason: null },
    ],
  }),
);
payloads.push(JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }));

const frame = (c: ChatCompletionChunk): string => `data: ${JSON.stringify(c)}\n\n`;

/** One stream: every event parsed (the full path), or as the driver runs it (the fast lane). */
function once(lane: boolean): number {
  const chain = createStreamChain(policies, ctx, phase.memos, phase.request, original, []);
  const fast = lane ? createFastLane(chain, frame) : null;
  let text = '';
  const sink = {
    chunk: (c: ChatCompletionChunk) => {
      text += frame(c);
    },
    framed: (t: string) => {
      text += t;
    },
  };
  for (const p of payloads) {
    if (fast?.take(p, sink)) continue;
    const chunk = JSON.parse(p) as ChatCompletionChunk;
    for (const c of chain.push(chunk)) text += frame(c);
    fast?.learn(p, chunk);
  }
  for (const c of chain.end().chunks) text += frame(c);
  return text.length;
}
for (let i = 0; i < 50; i++) {
  once(false);
  once(true);
}
const rounds = 200;
const total = { full: 0, lane: 0 };
// Interleaved, so drift on the machine hits both.
for (let r = 0; r < 10; r++) {
  for (const lane of [false, true]) {
    const t0 = performance.now();
    for (let i = 0; i < rounds / 10; i++) once(lane);
    total[lane ? 'lane' : 'full'] += performance.now() - t0;
  }
}
const per = (ms: number) => ((ms * 1000) / (rounds * payloads.length)).toFixed(2);
console.log(
  `policy chain${noLight.size ? ` (no onLight: ${[...noLight].join(',')})` : ''}${singleCall ? ' (parallel_tool_calls false)' : ''}, ${payloads.length} chunks (parse + hooks + framing): full path ${per(total.full)} µs per chunk, fast lane ${per(total.lane)} µs per chunk`,
);
