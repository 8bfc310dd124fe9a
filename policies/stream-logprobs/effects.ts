/** stream-logprobs' effects: a streamed request with tools sent without the logprobs it asked for. */
import type { EffectRecord } from '../types.js';

export const STREAM_LOGPROBS_POLICY = 'stream-logprobs';

export interface StreamLogprobsEffect {
  policy: typeof STREAM_LOGPROBS_POLICY;
  kind: 'logprobs-dropped';
  count: 1;
}

/** The log line's `effects` only: the refusal's decision (`logprobs-refused`) already counts and traces the turn. */
export function describeStreamLogprobsEffect(_effect: StreamLogprobsEffect): EffectRecord | undefined {
  return undefined;
}
