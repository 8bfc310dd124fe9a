/**
 * ServiceNow Apriel 1.5 / 1.6 (llama.cpp "Apriel 1.5"; vLLM's `apriel` reasoning parser).
 * Apriel 1.6 Thinker's prompt opens the reasoning itself ("Here are my reasoning steps:"), so
 * the output is reasoning up to `[BEGIN FINAL RESPONSE]`, then the answer, which may end with
 * `[END FINAL RESPONSE]`. There is no opening marker in the output: with startsInReasoning the
 * think splitter ends the reasoning at `[BEGIN FINAL RESPONSE]`; without it the marker is text,
 * but a bare one still says the output began in reasoning (a call before it is a draft).
 * Calls are `<tool_calls>[{"name": …, "arguments": …}]</tool_calls>`, read by the shared
 * `<tool_calls>` JSON-array reader (hunyuan.ts).
 *
 * `[END FINAL RESPONSE]` is removed only when it ends the output (whitespace may follow): in
 * the middle of text it is quoted prose and stays.
 */
import { defineFamily } from '../engine/define.js';
import { trailingControlToken } from '../kit/long-tail.js';

export const apriel = defineFamily({
  name: 'apriel',
  markers: ['[END FINAL RESPONSE]'],
  priority: 60,
  backend: { llamacpp: 'Apriel 1.5' },
  reasoning: [{ close: '[BEGIN FINAL RESPONSE]' }],
  match: trailingControlToken,
});
