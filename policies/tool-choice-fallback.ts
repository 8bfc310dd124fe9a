/**
 * Pure pieces of "fallback once": which upstream errors mean "this backend cannot do
 * tool_choice required", and when a failed forced request may be retried with "auto".
 * The pipeline (server/) does the retry and remembers the verdict per upstream + model.
 *
 * Only call these for a request toolproof itself forced to "required": a client that asked for
 * "required" explicitly gets the upstream's error relayed.
 *
 * A status alone never means "rejects required": a 503 "busy", a 500 "CUDA out of memory" or
 * "image input is not supported" says nothing about tool_choice. Falling back on those would
 * send every request to an overloaded backend twice and, because the verdict is remembered for
 * fallbackTtlSeconds, take the harness away from every client of that model. So only a message
 * the table below recognises counts, on 400/422 and on 5xx alike; everything else is relayed.
 */

export interface RequiredRejection {
  rejected: boolean;
  /** Which known message matched (or why not), for the log line. */
  reason: string;
}

interface Signature {
  reason: string;
  pattern: RegExp;
}

/**
 * Messages matched case-insensitively, with their sources. Each one names tool_choice /
 * "required" or a guided-decoding backend refusing the grammar built from the tools: generic
 * words ("required" alone, "invalid request") would also match "'messages' is required" or
 * pydantic's "Field required", which must be relayed, not retried.
 */
const SIGNATURES: readonly Signature[] = [
  {
    // vLLM < 0.8.3, vllm/entrypoints/openai/protocol.py check_tool_usage:
    // '`tool_choice` must either be a named tool, "auto", or "none".' (and the older
    // '... must either be a named tool or "auto". `tool_choice="none" is not supported.');
    // reported in vllm-project/vllm#12834, pydantic/pydantic-ai#224.
    reason: 'vllm-named-or-auto-only',
    pattern: /tool_choice`?\s+must\s+(?:either\s+)?be\s+a\s+named\s+tool/i,
  },
  {
    // '"required" tool_choice is not supported', 'tool_choice="required" is not supported ...'
    // (vLLM feature gap, vllm-project/vllm#11700; OpenAI-compatible routes and proxies).
    reason: 'required-not-supported',
    pattern:
      /(?:["'`]required["'`]\s*tool[_ ]choice|tool[_ ]choice\s*[=:]?\s*["'`]?required["'`]?)[^.]{0,60}?(?:not\s+(?:yet\s+)?supported|unsupported|not\s+allowed|is\s+invalid)/i,
  },
  {
    // Modelverse/DeepSeek thinking mode: 'tool_choice ... does not support being set to required or object'.
    reason: 'required-not-supported',
    pattern: /does\s+not\s+support\s+being\s+set\s+to\s+required/i,
  },
  {
    // vLLM xgrammar backend: 'The provided JSON schema contains features not supported by xgrammar.'
    // (vllm/v1/structured_output/backend_xgrammar.py; with required: vllm-project/vllm#16880).
    reason: 'xgrammar-unsupported-schema',
    pattern: /features\s+not\s+supported\s+by\s+xgrammar/i,
  },
  {
    // vLLM v0 guided decoding: 'xgrammar does not support ...' / 'xgrammar only supports ...'.
    reason: 'xgrammar-unsupported',
    pattern: /xgrammar\s+(?:does\s+not|doesn't|only)\s+support/i,
  },
  {
    // vLLM xgrammar backend: f'Failed to transform json schema into a grammar: {err}'.
    reason: 'grammar-from-schema-failed',
    pattern: /failed\s+to\s+transform\s+json\s+schema\s+into\s+a\s+(?:grammar|regex)/i,
  },
  {
    // vLLM: 'Failed to convert the grammar from Lark to EBNF' / '... from GBNF to Lark' (guided decoding).
    reason: 'grammar-conversion-failed',
    pattern: /failed\s+to\s+convert\s+the\s+grammar/i,
  },
  {
    // vLLM guidance (llguidance) backend and SGLang: 'Grammar error: ...', 'Invalid grammar specification'.
    reason: 'grammar-error',
    pattern: /\bgrammar\s+error\b|invalid\s+grammar\s+specification/i,
  },
  {
    // SGLang scheduler (tool_choice "required" is enforced by a grammar): 'Grammar-based generation
    // (json_schema, regex, ebnf, structural_tag) is not supported when the server is launched with
    // --grammar-backend none' (sglang/srt/managers/scheduler.py).
    reason: 'sglang-no-grammar-backend',
    pattern: /grammar-based\s+generation\b[^.]{0,80}not\s+supported/i,
  },
  {
    // llama-server: 400 'Failed to initialize samplers: std::exception' when the grammar built
    // for required cannot be used (recorded: /work/shared/wire/llama-server, rawrandom-hermes
    // tools_required_*), and '... failed to parse grammar' (llama.cpp sampling).
    reason: 'llama-samplers-init-failed',
    pattern: /failed\s+to\s+initialize\s+samplers|failed\s+to\s+parse\s+grammar/i,
  },
  {
    // llama.cpp common/chat.cpp: 'Invalid tool_choice: <value>' (recorded 400 for "bogus");
    // LM Studio: "Invalid tool_choice type: 'object'. Supported string values: none, auto, required"
    // (lmstudio-ai/lmstudio-bug-tracker#670); Groq: "Only allowed string values for 'tool_choice' are [...]".
    reason: 'invalid-tool-choice',
    pattern:
      /invalid\s+(?:value\s+for\s+)?[`'"$.]*tool_choice|only\s+allowed\s+string\s+values\s+for\s+'?tool_choice/i,
  },
  {
    // Rust/serde servers (TGI-style routers, DeepSeek-compatible APIs):
    // 'unknown variant `required`, expected `function`'.
    reason: 'unknown-variant-required',
    pattern: /unknown\s+variant\s+[`'"]required[`'"]/i,
  },
  {
    // Generic OpenAI-compatible layers: 'unsupported tool_choice', 'tool_choice is not supported',
    // "'$.tool_choice' is invalid" (langchain-ai/langchain#16767).
    reason: 'tool-choice-unsupported',
    pattern:
      /unsupported\s+tool[_ ]choice|tool[_ ]choice['"`]?\s+(?:is\s+)?(?:not\s+supported|unsupported|is\s+invalid)/i,
  },
  {
    // vLLM with the Mistral tokenizer and tool_choice "required": 'Only fast tokenizers are supported'
    // (vllm-project/vllm#16887).
    reason: 'vllm-mistral-tokenizer',
    pattern: /only\s+fast\s+tokenizers\s+are\s+supported/i,
  },
];

const MAX_TEXT = 16_384;

/** The strings gathered so far, and their characters. */
interface Gathered {
  parts: string[];
  chars: number;
}

/**
 * Every string in an error body (OpenAI `error.message`, vLLM's flat `message`, TGI's `error`,
 * ...), until MAX_TEXT characters are gathered. What is gathered is counted as it grows: joined
 * again at every value visited, a body of many short strings (1 MB, under the error read's cap)
 * cost the square of them up to MAX_TEXT and a MAX_TEXT join per value after (seconds).
 */
function collectText(body: unknown, out: Gathered, depth = 0): void {
  if (depth > 6 || out.chars > MAX_TEXT) return;
  if (typeof body === 'string') {
    out.parts.push(body);
    out.chars += body.length;
  } else if (Array.isArray(body)) {
    for (const v of body) {
      if (out.chars > MAX_TEXT) return;
      collectText(v, out, depth + 1);
    }
  } else if (body !== null && typeof body === 'object') {
    for (const v of Object.values(body as Record<string, unknown>)) {
      if (out.chars > MAX_TEXT) return;
      collectText(v, out, depth + 1);
    }
  }
}

/** Statuses a rejection of tool_choice/the grammar arrives with (vLLM and llama-server use 400; some 500). */
function mayBeRejection(status: number): boolean {
  return status === 400 || status === 422 || (status >= 500 && status <= 599);
}

export function isRequiredRejection(status: number, body: unknown): RequiredRejection {
  if (!mayBeRejection(status)) return { rejected: false, reason: `status ${status}` };
  const gathered: Gathered = { parts: [], chars: 0 };
  collectText(body, gathered);
  const text = gathered.parts.join('\n').slice(0, MAX_TEXT);
  for (const s of SIGNATURES) if (s.pattern.test(text)) return { rejected: true, reason: s.reason };
  return { rejected: false, reason: 'no known required-rejection message' };
}

export interface FallbackInput {
  status: number;
  body: unknown;
  /** Bytes of this response already written to the client: after the first byte nothing is retried. */
  bytesSentToClient: number;
}

export function shouldFallback(input: FallbackInput): boolean {
  if (input.bytesSentToClient > 0) return false;
  return isRequiredRejection(input.status, input.body).rejected;
}
