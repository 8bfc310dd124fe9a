/**
 * Per-chunk CPU of the policy stream chain alone (no sockets): a forced final answer streamed
 * as N argument deltas through every response hook, as the stream driver runs them.
 * `npx tsx bench/chain-micro.ts [chunks]`
 */
import { performance } from 'node:perf_hooks';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS } from '../protocol/settings.js';
import { POLICIES } from '../policies/registry.js';
import { activePolicies, createStreamChain, runRequestPolicies } from '../server/chat/policy-runner.js';

const n = Number(process.argv[2] ?? 500);
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
};
const policies = activePolicies(POLICIES, DEFAULT_MODEL_SETTINGS);
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

function once(): number {
  const chain = createStreamChain(policies, ctx, phase.memos, phase.request, original, []);
  let bytes = 0;
  for (const p of payloads) {
    const chunk = JSON.parse(p) as ChatCompletionChunk;
    for (const c of chain.push(chunk)) bytes += JSON.stringify(c).length;
  }
  for (const c of chain.end().chunks) bytes += JSON.stringify(c).length;
  return bytes;
}
for (let i = 0; i < 50; i++) once();
const rounds = 200;
const t0 = performance.now();
for (let i = 0; i < rounds; i++) once();
const us = ((performance.now() - t0) * 1000) / (rounds * payloads.length);
console.log(
  `policy chain: ${us.toFixed(2)} µs per chunk (${payloads.length} chunks, parse + hooks + stringify)`,
);
