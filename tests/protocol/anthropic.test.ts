/**
 * The Messages translation's single cases: what each request field becomes in chat, what gets
 * a 400, stop reasons, error types, token counting helpers.
 */
import { describe, expect, it } from 'vitest';
import { estimateTokens, tokenizeCount } from '../../protocol/anthropic/count.js';
import { anthropicErrorBody as toAnthropicErrorBody } from '../../server/front-doors/messages/errors.js';
import { toChatRequest, translateRequest } from '../../protocol/anthropic/request.js';
import { stopReason, toMessage, toolInput } from '../../protocol/anthropic/response.js';
import type { MessagesRequest } from '../../protocol/anthropic/types.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletion } from '../../protocol/openai.js';

const req = (extra: Partial<MessagesRequest> = {}): MessagesRequest => ({
  model: 'm',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

function refused(r: MessagesRequest): ToolproofError {
  try {
    toChatRequest(r);
  } catch (err) {
    expect(err).toBeInstanceOf(ToolproofError);
    expect((err as ToolproofError).status).toBe(400);
    return err as ToolproofError;
  }
  throw new Error('expected a 400');
}

describe('toChatRequest', () => {
  it('images become image_url parts with data URLs; url sources stay URLs', () => {
    const chat = toChatRequest(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAAA' } },
              { type: 'image', source: { type: 'url', url: 'https://example.invalid/a.png' } },
            ],
          },
        ],
      }),
    );
    expect(chat.messages[0]!.content).toEqual([
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAAA' } },
      { type: 'image_url', image_url: { url: 'https://example.invalid/a.png' } },
    ]);
  });

  it('tool results come before the rest of the user turn; images in a result are kept', () => {
    const chat = toChatRequest(
      req({
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>x</system-reminder>' },
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [
                  { type: 'text', text: 'screen' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'BB' } },
                ],
              },
            ],
          },
        ],
      }),
    );
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(chat.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
    });
    expect(chat.messages[2]).toEqual({
      role: 'tool',
      tool_call_id: 't1',
      content: [
        { type: 'text', text: 'screen' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,BB' } },
      ],
    });
  });

  it('an error result without text still says it failed', () => {
    const chat = toChatRequest(
      req({
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', is_error: true }] }],
      }),
    );
    expect(chat.messages[0]).toEqual({ role: 'tool', tool_call_id: 'a', content: '[tool error]' });
  });

  it('thinking and redacted_thinking in history', () => {
    const chat = toChatRequest(
      req({
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'step 1. ', signature: 'sig' },
              { type: 'redacted_thinking', data: 'opaque' },
              { type: 'text', text: 'answer' },
            ],
          },
        ],
      }),
    );
    expect(chat.messages[1]).toEqual({ role: 'assistant', content: 'answer', reasoning_content: 'step 1. ' });
  });

  it('tool_choice mapping', () => {
    const tools = [{ name: 'a', input_schema: { type: 'object' } }];
    expect(toChatRequest(req({ tools, tool_choice: { type: 'auto' } })).tool_choice).toBe('auto');
    expect(toChatRequest(req({ tools, tool_choice: { type: 'any' } })).tool_choice).toBe('required');
    expect(toChatRequest(req({ tools, tool_choice: { type: 'none' } })).tool_choice).toBe('none');
    const named = toChatRequest(
      req({ tools, tool_choice: { type: 'tool', name: 'a', disable_parallel_tool_use: true } }),
    );
    expect(named.tool_choice).toEqual({ type: 'function', function: { name: 'a' } });
    expect(named.parallel_tool_calls).toBe(false);
    expect(toChatRequest(req({ tools })).tool_choice).toBeUndefined();
    expect(toChatRequest(req({ tools })).parallel_tool_calls).toBeUndefined();
  });

  it('thinking disabled sends enable_thinking false; absent sends nothing', () => {
    expect(toChatRequest(req({ thinking: { type: 'disabled' } })).chat_template_kwargs).toEqual({
      enable_thinking: false,
    });
    expect(toChatRequest(req()).chat_template_kwargs).toBeUndefined();
  });

  it('an empty system prompt adds no system message', () => {
    expect(toChatRequest(req({ system: [] })).messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(toChatRequest(req({ system: '' })).messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('streamed requests ask for usage', () => {
    expect(toChatRequest(req({ stream: true })).stream_options).toEqual({ include_usage: true });
    expect(toChatRequest(req()).stream).toBeUndefined();
  });

  it('mcp_servers, container and mcp_toolset tools are left out as hosted tools, not a 400', () => {
    // Anthropic's MCP connector and code-execution container: run by its servers, like server tools.
    const t = translateRequest(
      req({
        mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'wiki' }],
        container: 'container_011',
        tools: [
          { type: 'mcp_toolset', mcp_server_name: 'wiki' } as never,
          { name: 'Read', input_schema: { type: 'object' } },
        ],
      } as never),
    );
    expect(t.dropped).toEqual(['mcp_servers', 'container', 'mcp_toolset']);
    expect(t.refusal?.param).toBe('mcp_servers');
    expect(t.chat.tools?.map((x) => x.function.name)).toEqual(['Read']);
    expect(JSON.stringify(t.chat)).not.toContain('mcp.example');
    // empty ones are nothing to drop
    expect(translateRequest(req({ mcp_servers: [], container: null } as never)).dropped).toEqual([]);
  });

  it('what chat cannot express is a 400 naming the field', () => {
    expect(refused(req({ tools: [{ type: 'bash_20990101x', name: 'bash' } as never] })).param).toBe(
      'tools.0.type',
    );
    // A server tool is left out, with the 400 the hosted-tools policy answers under hostedTools: reject.
    const hosted = translateRequest(
      req({ tools: [{ type: 'web_search_20250305', name: 'web_search' } as never] }),
    );
    expect(hosted.dropped).toEqual(['web_search_20250305']);
    expect(hosted.refusal?.param).toBe('tools.0.type');
    expect(hosted.refusal?.status).toBe(400);
    expect(refused(req({ tools: [{ name: 'x' } as never] })).param).toBe('tools.0.input_schema');
    expect(
      refused(req({ messages: [{ role: 'user', content: [{ type: 'document', source: {} } as never] }] }))
        .param,
    ).toBe('messages.0.content.0.source');
    expect(refused(req({ tool_choice: { type: 'tool' } as never })).param).toBe('tool_choice.name');
    expect(refused(req({ messages: [{ role: 'developer', content: 'x' } as never] })).param).toBe(
      'messages.0.role',
    );
    expect(
      refused(
        req({
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file' } } as never] }],
        }),
      ).param,
    ).toBe('messages.0.content.0.source');
    expect(refused(req({ system: [{ type: 'image' }] as never })).param).toBe('system.0.type');
  });
});

describe('response mapping', () => {
  const ctx = { id: 'msg_1', model: 'client', stopSequences: ['END'] };
  it('stop reasons', () => {
    expect(stopReason('stop', false, null, ctx)).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
    expect(stopReason('stop', false, 'END', ctx)).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    expect(stopReason('stop', false, 'OTHER', ctx).stop_reason).toBe('end_turn');
    expect(stopReason('length', true, null, ctx).stop_reason).toBe('max_tokens');
    expect(stopReason('tool_calls', false, null, ctx).stop_reason).toBe('tool_use');
    expect(stopReason('stop', true, null, ctx).stop_reason).toBe('tool_use');
    expect(stopReason('content_filter', false, null, ctx).stop_reason).toBe('refusal');
  });

  it('tool input is always an object; what is not is kept under _raw', () => {
    expect(toolInput('{"a":1}')).toEqual({ a: 1 });
    expect(toolInput('')).toEqual({});
    expect(toolInput('[1]')).toEqual({ _raw: '[1]' });
    expect(toolInput('{bad')).toEqual({ _raw: '{bad' });
  });

  it('usage and the client model name', () => {
    const c: ChatCompletion = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 0,
      model: 'upstream/name',
      choices: [
        { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'x' }, stop_reason: 'END' },
      ],
      usage: {
        prompt_tokens: 3,
        completion_tokens: 2,
        total_tokens: 5,
        prompt_tokens_details: { cached_tokens: 1 },
      },
    };
    const m = toMessage(c, ctx);
    expect(m.model).toBe('client');
    expect(m.usage).toEqual({ input_tokens: 2, output_tokens: 2, cache_read_input_tokens: 1 });
    expect(m.stop_reason).toBe('stop_sequence');
    expect(m.stop_sequence).toBe('END');
  });
});

describe('errors', () => {
  it('Anthropic types by status', () => {
    const anthropicErrorType = (status: number) =>
      toAnthropicErrorBody({ status, message: 'm', detail: undefined }).error.type;
    expect([400, 401, 403, 404, 413, 415, 429, 500, 502, 503, 504].map(anthropicErrorType)).toEqual([
      'invalid_request_error',
      'authentication_error',
      'permission_error',
      'not_found_error',
      'request_too_large',
      'invalid_request_error',
      'rate_limit_error',
      'api_error',
      'api_error',
      'overloaded_error',
      'timeout_error',
    ]);
    expect(toAnthropicErrorBody(new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT'))).toEqual({
      type: 'error',
      error: { type: 'timeout_error', message: 'The upstream model server timed out.' },
    });
  });
});

describe('token counting helpers', () => {
  it('tokenize answers: vLLM count, llama-server tokens, anything else none', () => {
    expect(tokenizeCount({ count: 12, max_model_len: 100, tokens: [1] }, 'chat')).toBe(12);
    expect(tokenizeCount({ tokens: [1, 2, 3] }, 'text')).toBe(3);
    // llama-server's answer to the chat form (no "content"): not a count of anything.
    expect(tokenizeCount({ tokens: [] }, 'chat')).toBeUndefined();
    expect(tokenizeCount({ detail: 'Not Found' }, 'text')).toBeUndefined();
    expect(tokenizeCount('text', 'text')).toBeUndefined();
  });

  it('the estimate is 4 characters per token plus a flat cost per image', () => {
    const chat = toChatRequest(req({ messages: [{ role: 'user', content: 'x'.repeat(400) }] }));
    const n = estimateTokens(chat);
    expect(n).toBeGreaterThanOrEqual(100);
    expect(n).toBeLessThan(110);
    const withImage = toChatRequest(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'x'.repeat(400) },
              {
                type: 'image',
                source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(100_000) },
              },
            ],
          },
        ],
      }),
    );
    expect(estimateTokens(withImage) - n).toBeGreaterThanOrEqual(999);
    expect(estimateTokens(withImage) - n).toBeLessThan(1010);
  });
});
