/**
 * single-choice (request side): llama-server samples one choice per request and refuses any other
 * `n` with a 400 ("Field 'n': Value must be between 1 <= value <= 1", older builds "Only one
 * completion choice is allowed"); vLLM samples `n`. A client that asks `n: 2` of a llama-server
 * model got that 400 on every turn, as it sends `n` again each time. Once the upstream refused
 * that way (Policy.refusal: the request is prepared again and sent once more; the fact is
 * remembered per upstream and model), the request goes without `n`, and the attempt loop asks for
 * the choices it still owes one request each (server/chat/pipeline.ts: the client asked for
 * more choices than the request as sent), every choice through the harness as a single choice
 * is, then joins them into one answer with choices 0..n-1. Only `n` changes: the prompt's bytes
 * are the client's (docs/prefix.md).
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { type Policy, wasRefused } from '../types.js';
import { describeSingleChoiceEffect, SINGLE_CHOICE_POLICY, type SingleChoiceEffect } from './effects.js';
import { errorBodyHead } from '../kit/error-text.js';

/** The refusal's fact: the upstream answers one choice per request. */
const SINGLE_CHOICE_FACT = 'single-choice';

/**
 * llama-server's refusals of `n` != 1: the field check of recent builds (b9928, recorded in
 * /work/shared/wire: chat_plain_n2) and the older handler's words.
 */
const REFUSES_N = /Field 'n': Value must be between 1 <= value <= 1|Only one completion choice is allowed/;

function choicesOf(request: ChatCompletionRequest): number {
  const n: unknown = request.n;
  return typeof n === 'number' && Number.isInteger(n) ? n : 1;
}

/** Whether an error refused `sent` for asking several choices. Reads at most 2,000 characters. */
export function refusesChoices(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if (status !== 400 || choicesOf(sent) <= 1) return false;
  return REFUSES_N.test(errorBodyHead(body, 2000));
}

export const singleChoicePolicy: Policy<SingleChoiceEffect> = {
  name: SINGLE_CHOICE_POLICY,
  // Always on: it acts only once the upstream refused several choices (ctx.refused).
  enabled: () => true,
  describeEffect: describeSingleChoiceEffect,
  refusal: {
    fact: SINGLE_CHOICE_FACT,
    decision: 'choices-refused',
    refused: (status, body, sent) => refusesChoices(status, body, sent),
    describe: (status) =>
      `the upstream answers one choice per request (status ${status}): each choice asked by a request of its own, the answers joined`,
  },
  onRequest(request, ctx) {
    const n = choicesOf(request);
    if (n <= 1 || !wasRefused(ctx, SINGLE_CHOICE_FACT)) return { action: 'continue', request, effects: [] };
    const { n: _n, ...rest } = request;
    return {
      action: 'continue',
      request: rest as ChatCompletionRequest,
      effects: [{ policy: SINGLE_CHOICE_POLICY, kind: 'one-request-per-choice', count: n }],
    };
  },
};
