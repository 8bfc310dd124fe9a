/**
 * output-budget (request side): vLLM refuses a request whose output budget (`max_tokens`, or
 * `max_completion_tokens`, which it reads first) and prompt together pass the model's window, even
 * when the prompt alone fits: "This model's maximum context length is N tokens. However, you
 * requested C output tokens and your prompt contains at least P input tokens, for a total of at
 * least P+C tokens. ..." (vllm/renderers/params.py; older releases "'max_tokens' or
 * 'max_completion_tokens' is too large: C. ..." and "(P in the messages, C in the completion)").
 * llama-server takes such a budget and stops where the context fills. An agent sends the same
 * budget on every turn (opencode and Claude Code 32,000 output tokens, an SDK loop its
 * ModelSettings), and its prompt only grows: on a 32k model every turn was refused. Before, toolproof
 * read the refusal as a prompt over the window and cut the older tool results, which left the
 * budget as it was: refused again, and the cut degraded every later turn for nothing.
 * Once the upstream refused a budget that way (the prompt not known over the window by itself),
 * the request goes without the budget: the backend then gives the answer the rest of the window
 * (vLLM's default: the window less the prompt), which is less than the budget asked whenever the
 * budget was refused. The client's budget is a bound, so the drop is remembered only where it
 * keeps it: with the refused prompt, per upstream, model and key (UpstreamRefusal.values.ofPrompt),
 * so the same session's later turns (their messages beginning with the refused ones, the same
 * tools and budget: no shorter, refused again) go without it from the start. Another prompt with
 * that budget (a short one, another session's) goes as the client wrote it: it may fit, and
 * without the budget the backend could answer past it; refused, it goes again without it. Another
 * budget is judged on its own. Only those two fields change: the prompt's bytes are the client's.
 * Where the prompt alone is over too, the backend refuses the budgetless request as over the
 * window, and that refusal is the window's (the older results cut, server/chat/attempt.ts).
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { parseContextOverflow } from '../../protocol/context-overflow.js';
import type { Policy } from '../types.js';
import { describeOutputBudgetEffect, OUTPUT_BUDGET_POLICY, type OutputBudgetEffect } from './effects.js';

const DROPPED: OutputBudgetEffect = Object.freeze({
  policy: OUTPUT_BUDGET_POLICY,
  kind: 'output-budget-dropped',
  count: 1,
}) as OutputBudgetEffect;

/**
 * The request's output budget as vLLM reads it (max_completion_tokens first), as a value to
 * remember (`output-budget:<n>`: the refused values of all policies share one set).
 */
export function outputBudget(request: ChatCompletionRequest): string | undefined {
  const budget = request.max_completion_tokens ?? request.max_tokens;
  return typeof budget === 'number' && Number.isSafeInteger(budget) && budget > 0
    ? `output-budget:${budget}`
    : undefined;
}

/**
 * The budget of `sent` the error refused: an overflow that names an output budget, with a prompt
 * not known over the window by itself (a count under the window, or vLLM's bound "at least P");
 * none otherwise. Reads at most the message's first 2,000 characters (parseContextOverflow).
 */
export function refusedBudget(status: number, body: unknown, sent: ChatCompletionRequest): string[] {
  if (status !== 400 && status !== 413) return [];
  const budget = outputBudget(sent);
  if (budget === undefined) return [];
  const overflow = parseContextOverflow(body);
  if (overflow?.completion === undefined || overflow.completion <= 0) return [];
  if (overflow.prompt !== undefined && !overflow.bound && overflow.prompt >= overflow.max) return [];
  return [budget];
}

export const outputBudgetPolicy: Policy<OutputBudgetEffect> = {
  name: OUTPUT_BUDGET_POLICY,
  // Always on: it acts only once the upstream refused (ctx.refused).
  enabled: () => true,
  describeEffect: describeOutputBudgetEffect,
  refusal: {
    fact: 'output-budget',
    decision: 'output-budget-refused',
    refused: (status, body, sent) => refusedBudget(status, body, sent).length > 0,
    describe: (status) =>
      `the upstream refused the output budget with the prompt past its window (status ${status}): sent again without max_tokens, the answer given the rest of the window`,
    values: {
      ofPrompt: true,
      named: refusedBudget,
      candidates: (request) => {
        const budget = outputBudget(request);
        return budget === undefined ? [] : [budget];
      },
    },
  },
  onRequest(request, ctx) {
    const budget = outputBudget(request);
    if (budget === undefined || ctx.refused?.values?.has(budget) !== true)
      return { action: 'continue', request, effects: [] };
    const { max_tokens: _m, max_completion_tokens: _c, ...rest } = request;
    return { action: 'continue', request: rest as ChatCompletionRequest, effects: [DROPPED] };
  },
};
