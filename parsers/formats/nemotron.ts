/**
 * NVIDIA Nemotron (Llama-Nemotron / Nemotron-Nano v2, vLLM `nemotron_json` / `llama_nemotron_json`):
 * `<TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>`.
 */
import { jsonEnvelopeFamily } from '../kit/json-envelope.js';

export const nemotron = jsonEnvelopeFamily({
  name: 'nemotron',
  open: '<TOOLCALL>',
  end: '</TOOLCALL>',
  claims: '{[',
  priority: 42,
  backend: { vllm: 'nemotron_json' },
});
