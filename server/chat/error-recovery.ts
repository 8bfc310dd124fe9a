/**
 * llama-server answers some chat-parser failures with HTTP 500 "Failed to parse input at pos N:
 * <raw model output>": the model's call is right there in the error text. When the request
 * declared tools, toolproof parses it back and answers 200 with a normal completion.
 */
import { randomBytes } from 'node:crypto';
import type { ChatCompletion, ChatCompletionRequest } from '../../protocol/openai.js';
import { declaredTools } from '../../protocol/tools.js';
import { recoverFromErrorText } from '../../parsers/recover.js';
import type { PolicyEffect } from '../../policies/types.js';
import { upstreamErrorMessage } from '../error-handler.js';
import type { ChatCall } from './context.js';

export function newCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

export function recoverErrorCompletion(
  call: ChatCall,
  sent: ChatCompletionRequest,
  body: unknown,
): { completion: ChatCompletion; effects: PolicyEffect[] } | null {
  const tools = declaredTools(sent);
  if (tools.size === 0) return null;
  const message = upstreamErrorMessage(body, '');
  if (!message) return null;
  const result = recoverFromErrorText(message, {
    tools,
    parsers: call.route.settings.parsers,
    newId: newCallId,
  });
  if (!result || result.calls.length === 0) return null;
  const completion: ChatCompletion = {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: call.original.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: result.content,
          tool_calls: result.calls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          })),
          ...(result.reasoning ? { reasoning_content: result.reasoning } : {}),
        },
        finish_reason: 'tool_calls',
      },
    ],
  };
  return {
    completion,
    effects: result.leaks.map((leak) => ({ policy: 'leak-recovery', kind: 'leak', detail: leak })),
  };
}
