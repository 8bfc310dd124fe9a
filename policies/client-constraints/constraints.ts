/** What the client's request asks of the tool calls it receives, read from its own request. */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { clientToolChoice, parallelCallsAllowed } from '../kit/client-choice.js';

export interface Constraints {
  /** tool_choice "none": calls become text. */
  noCalls: boolean;
  /** parallel_tool_calls false: one call per choice. */
  singleCall: boolean;
}

export function constraintsOf(original: ChatCompletionRequest): Constraints {
  return {
    noCalls: clientToolChoice(original).kind === 'none',
    singleCall: !parallelCallsAllowed(original),
  };
}
