import { describe, expect, it } from 'vitest';
import { isRequiredRejection, shouldFallback } from '../../policies/tool-choice-fallback.js';

/** Real bodies (or the real message in the shape that server sends), with where each comes from. */
const REJECTIONS: Array<{ source: string; status: number; body: unknown; reason: string }> = [
  {
    source: 'vLLM < 0.8.3 protocol.py (vllm#12834, pydantic-ai#224), flat vLLM error shape',
    status: 400,
    body: {
      object: 'error',
      message: '`tool_choice` must either be a named tool, "auto", or "none".',
      type: 'BadRequestError',
      param: null,
      code: 400,
    },
    reason: 'vllm-named-or-auto-only',
  },
  {
    source: 'vLLM 0.6.x pydantic wrapping of the same ValueError',
    status: 400,
    body: {
      object: 'error',
      message:
        "[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, `tool_choice` must either be a named tool or \"auto\". `tool_choice=\"none\" is not supported.'}]",
      type: 'BadRequestError',
      code: 400,
    },
    reason: 'vllm-named-or-auto-only',
  },
  {
    source: 'proxy/route wording: tool_choice="required" is not supported',
    status: 400,
    body: {
      error: {
        message: 'tool_choice must either be a named tool or "auto". tool_choice="required" is not supported',
        type: 'invalid_request_error',
      },
    },
    reason: 'vllm-named-or-auto-only',
  },
  {
    source: '"required" tool_choice is not supported (vLLM feature gap wording, vllm#11700)',
    status: 400,
    body: {
      error: { message: '"required" tool_choice is not supported yet', type: 'BadRequestError', code: 400 },
    },
    reason: 'required-not-supported',
  },
  {
    source: 'vLLM backend_xgrammar.py (vllm#16880: required + minItems)',
    status: 400,
    body: {
      error: {
        message: 'The provided JSON schema contains features not supported by xgrammar.',
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    },
    reason: 'xgrammar-unsupported-schema',
  },
  {
    source: 'vLLM v0 guided decoding',
    status: 400,
    body: { object: 'error', message: 'xgrammar does not support regex guided decoding', code: 400 },
    reason: 'xgrammar-unsupported',
  },
  {
    source: 'vLLM backend_xgrammar.py',
    status: 400,
    body: {
      error: {
        message: 'Failed to transform json schema into a grammar: unsupported keyword "patternProperties"',
      },
    },
    reason: 'grammar-from-schema-failed',
  },
  {
    source: 'vLLM structured output utils (Lark -> EBNF)',
    status: 400,
    body: { error: { message: 'Failed to convert the grammar from Lark to EBNF. ' } },
    reason: 'grammar-conversion-failed',
  },
  {
    source: 'vLLM guidance / llguidance backend',
    status: 400,
    body: { error: { message: 'Grammar error: unsatisfiable schema' } },
    reason: 'grammar-error',
  },
  {
    source: 'SGLang scheduler with --grammar-backend none',
    status: 400,
    body: {
      object: 'error',
      message:
        'Grammar-based generation (json_schema, regex, ebnf, structural_tag) is not supported when the server is launched with --grammar-backend none',
      type: 'BadRequestError',
      code: 400,
    },
    reason: 'sglang-no-grammar-backend',
  },
  {
    source: 'llama-server b9928, recorded: rawrandom-hermes__tools_required_1tool_nonstream.json',
    status: 400,
    body: {
      error: {
        code: 400,
        message: 'Failed to initialize samplers: std::exception',
        type: 'invalid_request_error',
      },
    },
    reason: 'llama-samplers-init-failed',
  },
  {
    source: 'llama-server grammar too large (tool schema maxLength) as reported by users',
    status: 400,
    body: {
      error: {
        code: 400,
        message: 'Failed to initialize samplers: failed to parse grammar',
        type: 'invalid_request_error',
      },
    },
    reason: 'llama-samplers-init-failed',
  },
  {
    source: 'llama.cpp common/chat.cpp (recorded 400 for "bogus")',
    status: 400,
    body: { error: { code: 400, message: 'Invalid tool_choice: required', type: 'invalid_request_error' } },
    reason: 'invalid-tool-choice',
  },
  {
    source: 'LM Studio (lmstudio-bug-tracker#670), plain string error',
    status: 400,
    body: { error: "Invalid tool_choice type: 'object'. Supported string values: none, auto, required" },
    reason: 'invalid-tool-choice',
  },
  {
    source: 'Groq-style OpenAI layer',
    status: 400,
    body: {
      error: {
        message: "code=400, message=Only allowed string values for 'tool_choice' are [none, auto, required]",
        type: 'invalid_request_error',
      },
    },
    reason: 'invalid-tool-choice',
  },
  {
    source: 'serde-based servers (DeepSeek-compatible, TGI-style routers), 422',
    status: 422,
    body: 'Failed to deserialize the JSON body into the target type: tool_choice: unknown variant `required`, expected `function`',
    reason: 'unknown-variant-required',
  },
  {
    source: 'generic OpenAI-compatible layer',
    status: 400,
    body: { error: { message: 'tool_choice is not supported by this provider' } },
    reason: 'tool-choice-unsupported',
  },
  {
    source: 'Modelverse / DeepSeek thinking mode',
    status: 400,
    body: {
      error: { message: 'tool_choice does not support being set to required or object in thinking mode' },
    },
    reason: 'required-not-supported',
  },
  {
    source: 'vLLM + Mistral tokenizer with required (vllm#16887)',
    status: 400,
    body: { object: 'error', message: 'Only fast tokenizers are supported', code: 400 },
    reason: 'vllm-mistral-tokenizer',
  },
];

const NOT_REJECTIONS: Array<{ source: string; status: number; body: unknown }> = [
  {
    source: 'vLLM context length',
    status: 400,
    body: {
      object: 'error',
      message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
      code: 400,
    },
  },
  {
    source: "llama-server 'messages' is required (recorded)",
    status: 400,
    body: { error: { code: 400, message: "'messages' is required", type: 'invalid_request_error' } },
  },
  {
    source: 'pydantic Field required',
    status: 400,
    body: {
      object: 'error',
      message:
        "1 validation error for ChatCompletionRequest\nmessages\n  Field required [type=missing, input_value={'model': 'm'}, input_type=dict]",
      code: 400,
    },
  },
  {
    source: 'llama-server Mistral Nemo template ids (recorded)',
    status: 400,
    body: {
      error: {
        code: 400,
        message:
          'Unable to generate parser for this template. Automatic parser generation failed: Jinja Exception: Tool call IDs should be alphanumeric strings with length 9!',
        type: 'invalid_request_error',
      },
    },
  },
  {
    source: 'llama-server two assistant messages (recorded)',
    status: 400,
    body: {
      error: {
        code: 400,
        message: 'Cannot have 2 or more assistant messages at the end of the list.',
        type: 'invalid_request_error',
      },
    },
  },
  {
    source: 'vLLM auto needs flags (an "auto" problem, not a required one)',
    status: 400,
    body: {
      object: 'error',
      message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      code: 400,
    },
  },
  {
    source: 'llama-server auth (recorded)',
    status: 401,
    body: { error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } },
  },
  { source: 'not found', status: 404, body: { error: { message: 'The model `x` does not exist.' } } },
  {
    source: 'a required-looking message on a non-400/422 status',
    status: 401,
    body: { error: { message: 'Invalid tool_choice: required' } },
  },
  { source: 'empty body', status: 400, body: null },
];

/** 5xx answers that say nothing about tool_choice: relayed, never a fallback, never remembered. */
const UNRELATED_5XX: Array<{ source: string; status: number; body: unknown }> = [
  {
    source: 'llama-server busy / loading (503 unavailable_error)',
    status: 503,
    body: { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
  },
  { source: 'overloaded proxy, empty body', status: 503, body: null },
  { source: 'plain text 502', status: 502, body: 'Bad Gateway' },
  {
    source: 'CUDA out of memory (torch message relayed by vLLM as 500)',
    status: 500,
    body: {
      object: 'error',
      message:
        'CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free.',
      type: 'InternalServerError',
      code: 500,
    },
  },
  {
    source: 'llama-server image input without mmproj (500)',
    status: 500,
    body: {
      error: {
        code: 500,
        message:
          'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
        type: 'server_error',
      },
    },
  },
  {
    source: 'context length as a 500',
    status: 500,
    body: {
      error: {
        code: 500,
        message: 'the request exceeds the available context size, try increasing it',
        type: 'server_error',
      },
    },
  },
  {
    source: 'a 500 whose text mentions tools but not a rejection',
    status: 500,
    body: { error: { message: 'Internal error while rendering tools: required key "name" missing' } },
  },
];

describe('isRequiredRejection', () => {
  it.each(REJECTIONS)('recognises $source', ({ status, body, reason }) => {
    expect(isRequiredRejection(status, body)).toEqual({ rejected: true, reason });
  });

  it.each(NOT_REJECTIONS)('relays $source', ({ status, body }) => {
    expect(isRequiredRejection(status, body).rejected).toBe(false);
  });

  it('reads raw text bodies too', () => {
    expect(isRequiredRejection(400, 'Failed to initialize samplers: std::exception').rejected).toBe(true);
  });
});

describe('shouldFallback', () => {
  const rejection = REJECTIONS.find((r) => r.reason === 'llama-samplers-init-failed')!;
  it('falls back on a rejection before any byte was sent', () => {
    expect(shouldFallback({ status: rejection.status, body: rejection.body, bytesSentToClient: 0 })).toBe(
      true,
    );
  });
  it('falls back on a 5xx only when its message is a recognised rejection', () => {
    const body = { error: { code: 500, message: 'Grammar error: unexpected token', type: 'server_error' } };
    expect(shouldFallback({ status: 500, body, bytesSentToClient: 0 })).toBe(true);
    expect(isRequiredRejection(502, 'Failed to initialize samplers: std::exception').rejected).toBe(true);
  });
  // Regression (issue 9): every 5xx used to switch forced tool use off for fallbackTtlSeconds.
  it.each(UNRELATED_5XX)('relays an unrelated 5xx: $source', ({ status, body }) => {
    expect(shouldFallback({ status, body, bytesSentToClient: 0 })).toBe(false);
    expect(isRequiredRejection(status, body).rejected).toBe(false);
  });
  it('never after bytes reached the client', () => {
    expect(shouldFallback({ status: 500, body: null, bytesSentToClient: 10 })).toBe(false);
    expect(shouldFallback({ status: rejection.status, body: rejection.body, bytesSentToClient: 1 })).toBe(
      false,
    );
  });
  it('not on other 4xx', () => {
    for (const r of NOT_REJECTIONS)
      expect(shouldFallback({ status: r.status, body: r.body, bytesSentToClient: 0 })).toBe(false);
  });
});
