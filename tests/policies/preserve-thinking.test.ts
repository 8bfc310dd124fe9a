import { describe, expect, it } from 'vitest';
import { preserveThinkingPolicy } from '../../policies/preserve-thinking/index.js';
import { ctxWith, request } from './helpers.js';

describe('preserve-thinking', () => {
  it('is off by default and on only for preserveThinking: true', () => {
    expect(preserveThinkingPolicy.enabled(ctxWith().settings)).toBe(false);
    expect(preserveThinkingPolicy.enabled(ctxWith({}, { preserveThinking: 'auto' }).settings)).toBe(false);
    expect(preserveThinkingPolicy.enabled(ctxWith({}, { preserveThinking: true }).settings)).toBe(true);
  });

  it('appends both switches after the prompt; a key the client set wins; the same bytes every turn', () => {
    const ctx = ctxWith({}, { preserveThinking: true });
    const req = request({ chat_template_kwargs: { clear_thinking: true } } as never);
    const out = preserveThinkingPolicy.onRequest!(req, ctx, req);
    expect(out.action).toBe('continue');
    const sent = (out as { request: Record<string, unknown> }).request;
    expect(sent.chat_template_kwargs).toEqual({ clear_thinking: true, preserve_thinking: true });
    expect(Object.keys(sent)).toEqual(['model', 'messages', 'chat_template_kwargs']);
    expect(JSON.stringify(preserveThinkingPolicy.onRequest!(req, ctx, req))).toBe(JSON.stringify(out));
    expect(req).toEqual(request({ chat_template_kwargs: { clear_thinking: true } } as never));
  });
});
