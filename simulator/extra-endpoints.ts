/** /v1/completions and /v1/embeddings: simple, deterministic, in each personality's id style. */
import type { Generation } from './generate.js';
import { countTokens, hashString, randomAlnum, randomHex, splitTokens } from './tokens.js';
import type { Personality } from './types.js';

export function completionId(personality: Personality): string {
  return personality === 'vllm' ? `cmpl-${randomHex(32)}` : `cmpl-${randomAlnum(32)}`;
}

export function completionText(gen: Generation): string {
  return gen.content + gen.calls.map((c) => `{"name": "${c.name}", "arguments": ${c.arguments}}`).join('\n');
}

interface TextMeta {
  id: string;
  created: number;
  model: string;
  promptTokens: number;
  includeUsage: boolean;
}

function usage(meta: TextMeta, text: string) {
  const completion = splitTokens(text).length;
  return {
    prompt_tokens: meta.promptTokens,
    completion_tokens: completion,
    total_tokens: meta.promptTokens + completion,
  };
}

export function textCompletion(text: string, finish: string, meta: TextMeta) {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
    usage: usage(meta, text),
  };
}

export function textCompletionChunks(text: string, finish: string, meta: TextMeta): unknown[] {
  const base = { id: meta.id, object: 'text_completion', created: meta.created, model: meta.model };
  const out: unknown[] = splitTokens(text).map((p) => ({
    ...base,
    choices: [{ index: 0, text: p, logprobs: null, finish_reason: null }],
  }));
  out.push({ ...base, choices: [{ index: 0, text: '', logprobs: null, finish_reason: finish }] });
  if (meta.includeUsage) out.push({ ...base, choices: [], usage: usage(meta, text) });
  return out;
}

/** A unit vector seeded by the text: equal inputs give equal vectors, across runs. */
function embed(text: string, dims: number): number[] {
  let seed = hashString(text) || 1;
  const v: number[] = [];
  for (let i = 0; i < dims; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    v.push(seed / 0xffffffff - 0.5);
  }
  const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

export function embeddingsResponse(
  inputs: string[],
  dims: number,
  model: string,
  personality: Personality,
  created: number,
) {
  const tokens = inputs.reduce((a, t) => a + countTokens(t), 0);
  const data = inputs.map((t, index) => ({ object: 'embedding', index, embedding: embed(t, dims) }));
  const usageBlock = { prompt_tokens: tokens, total_tokens: tokens };
  if (personality === 'vllm') {
    return { id: `embd-${randomHex(32)}`, object: 'list', created, model, data, usage: usageBlock };
  }
  return { model, object: 'list', usage: usageBlock, data };
}
