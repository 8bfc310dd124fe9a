/**
 * The stream's fast lane, as the policies see it (types.ts: LightDelta, LightFrame, onLight).
 *
 * Nearly every event of a forced, streamed final answer is one argument fragment of the
 * final_answer call, and nearly every chunk the client gets for it is one piece of answer text.
 * Building, copying and serializing a chunk object per policy for such an event is most of what
 * the harness costs per chunk; a light delta carries only the piece, and the rest of the chunk
 * (the frame) is shared by the whole run of such events.
 *
 * The contract a hook's onLight keeps: its answer is exactly what onChunk would return for
 * `materializeLight(delta, frame)`, reduced again, and it changes its state exactly as onChunk
 * would. Where that cannot be told cheaply it answers undefined without touching its state and
 * the chain takes the full path from that hook on (tests/server/fast-lane.test.ts compares both).
 */
import type { ChatCompletionChunk, Delta } from '../protocol/openai.js';
import { type LightDelta, type LightFrame, markLiveAnswer } from './types.js';

function deltaOf(light: LightDelta): Delta {
  return light.kind === 'answer'
    ? { content: light.text }
    : { tool_calls: [{ index: light.call, function: { arguments: light.fragment } }] };
}

/** The chunk a light delta stands for (an answer chunk is marked LIVE_ANSWER, as force-tool-use marks it). */
export function materializeLight(light: LightDelta, frame: LightFrame): ChatCompletionChunk {
  const choice = frame.chunk.choices[0]!;
  const chunk: ChatCompletionChunk = {
    ...frame.chunk,
    choices: [{ ...choice, delta: deltaOf(light), finish_reason: null }],
  };
  return light.kind === 'answer' ? markLiveAnswer(chunk) : chunk;
}
