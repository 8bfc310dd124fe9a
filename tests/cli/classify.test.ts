import { describe, expect, it } from 'vitest';
import { calledNames, classifyResponse, countKinds, identifyBackend } from '../../cli/probe/classify.js';
import type { LeakDetector } from '../../cli/probe/detect.js';
import type { ChatOutcome } from '../../cli/probe/http.js';
import { declaredTools, RUN_PYTHON } from '../../cli/probe/prompts.js';

const tools = declaredTools([RUN_PYTHON]);

/** Hand-made detector: recognises Hermes <tool_call> envelopes only. */
const fakeDetect: LeakDetector = (message) => {
  const text = `${message.content ?? ''}${message.reasoning ?? ''}`;
  const match = /<tool_call>\s*(\{.*\})\s*<\/tool_call>/s.exec(text);
  if (!match) return null;
  const parsed = JSON.parse(match[1] ?? '{}') as { name?: string };
  return {
    format: 'hermes',
    backendHint: 'vllm --tool-call-parser hermes',
    recovered: true,
    names: [parsed.name ?? ''],
  };
};

function ok(message: Record<string, unknown>): ChatOutcome {
  return {
    ok: true,
    status: 200,
    body: { choices: [{ index: 0, message: { role: 'assistant', ...message } }] },
  };
}

describe('classifyResponse', () => {
  it('structured tool_calls are a tool call, with their names', () => {
    const result = classifyResponse(
      ok({
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'run_python', arguments: '{"code":"1"}' } },
        ],
      }),
      tools,
      fakeDetect,
    );
    expect(result).toEqual({ kind: 'tool_call', names: ['run_python'] });
  });

  it('a call written into content is a leak, with the format and backend hint', () => {
    const result = classifyResponse(
      ok({ content: '<tool_call>\n{"name": "run_python", "arguments": {"code": "print(1)"}}\n</tool_call>' }),
      tools,
      fakeDetect,
    );
    expect(result).toMatchObject({
      kind: 'leaked',
      format: 'hermes',
      backendHint: 'vllm --tool-call-parser hermes',
    });
  });

  it('looks into reasoning_content too', () => {
    const result = classifyResponse(
      ok({ content: '', reasoning_content: '<tool_call>{"name":"run_python","arguments":{}}</tool_call>' }),
      tools,
      fakeDetect,
    );
    expect(result.kind).toBe('leaked');
  });

  it('an empty tool_calls array with plain text is prose', () => {
    const result = classifyResponse(ok({ content: '391', tool_calls: [] }), tools, fakeDetect);
    expect(result).toEqual({ kind: 'prose', claimsExecution: false, looksLikeCall: false, excerpt: '391' });
  });

  it('flags prose that claims the tool ran', () => {
    const result = classifyResponse(
      ok({ content: 'The sum is 76127! I calculated it with Python, so it is exact.' }),
      tools,
      fakeDetect,
    );
    expect(result).toMatchObject({ kind: 'prose', claimsExecution: true });
  });

  it('content given as text parts is read', () => {
    const result = classifyResponse(ok({ content: [{ type: 'text', text: 'hello' }] }), tools, fakeDetect);
    expect(result).toMatchObject({ kind: 'prose', excerpt: 'hello' });
  });

  it('HTTP and network failures are errors with their status', () => {
    expect(classifyResponse({ ok: false, status: 400, message: 'bad' }, tools, fakeDetect)).toEqual({
      kind: 'error',
      status: 400,
      message: 'bad',
    });
    expect(
      classifyResponse({ ok: false, status: null, message: 'ECONNREFUSED' }, tools, fakeDetect),
    ).toMatchObject({
      kind: 'error',
      status: null,
    });
  });

  it('a 200 without choices is an error', () => {
    const result = classifyResponse({ ok: true, status: 200, body: { object: 'error' } }, tools, fakeDetect);
    expect(result).toMatchObject({ kind: 'error', status: 200 });
  });
});

describe('countKinds / calledNames', () => {
  it('counts each kind', () => {
    expect(
      countKinds([
        { kind: 'tool_call', names: ['a'] },
        { kind: 'leaked', format: 'hermes', recovered: true, names: ['a'] },
        { kind: 'leaked', format: 'hermes', recovered: false, names: [] },
        { kind: 'prose', claimsExecution: false, looksLikeCall: false, excerpt: '' },
        { kind: 'error', status: 500, message: 'x' },
      ]),
    ).toEqual({ tool: 1, leak: 2, prose: 1, error: 1 });
  });

  it('names come from structured and recovered calls only', () => {
    expect(calledNames({ kind: 'leaked', format: 'x', recovered: true, names: ['get_weather'] })).toEqual([
      'get_weather',
    ]);
    expect(
      calledNames({ kind: 'prose', claimsExecution: false, looksLikeCall: false, excerpt: 'get_weather' }),
    ).toEqual([]);
  });
});

describe('identifyBackend', () => {
  const models = (ownedBy: string): ChatOutcome => ({
    ok: true,
    status: 200,
    body: { object: 'list', data: [{ id: 'm', object: 'model', owned_by: ownedBy }] },
  });
  it('reads owned_by from GET /models', () => {
    expect(identifyBackend(models('vllm'), false)).toEqual({
      kind: 'vllm',
      ownedBy: 'vllm',
      viaToolproof: false,
    });
    expect(identifyBackend(models('llamacpp'), true)).toEqual({
      kind: 'llama-server',
      ownedBy: 'llamacpp',
      viaToolproof: true,
    });
    expect(identifyBackend(models('openai'), false).kind).toBe('unknown');
    expect(identifyBackend({ ok: false, status: 404, message: 'no' }, false)).toEqual({
      kind: 'unknown',
      viaToolproof: false,
    });
  });
});
