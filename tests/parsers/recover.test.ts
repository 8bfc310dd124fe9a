import { describe, expect, it } from 'vitest';
import {
  createRecoveryStream,
  detectFormat,
  type RecoveryEvent,
  recoverFromErrorText,
  recoverMessage,
} from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';

const tools = new Map<string, DeclaredTool>([
  [
    'get_weather',
    { name: 'get_weather', parameters: { type: 'object', properties: { days: { type: 'integer' } } } },
  ],
  ['now', { name: 'now' }],
]);
function opts(extra: object = {}) {
  let n = 0;
  return { tools, newId: () => `call_${n++}`, ...extra };
}
const HERMES = '<tool_call>{"name": "now", "arguments": {}}</tool_call>';

describe('recoverMessage', () => {
  it('returns the call with canonical JSON arguments, id from newId, format and backend hint', () => {
    const r = recoverMessage({ content: `Hi.\n${HERMES}`, reasoning: null }, opts());
    expect(r.content).toBe('Hi.');
    expect(r.calls).toEqual([
      { id: 'call_0', name: 'now', arguments: '{}', format: 'hermes', source: 'content', repairs: [] },
    ]);
    expect(r.leaks).toEqual([
      {
        format: 'hermes',
        source: 'content',
        outcome: 'recovered',
        backendHint: 'vllm --tool-call-parser hermes',
      },
    ]);
  });

  it('keeps a call id the format carries (Kimi)', () => {
    const t =
      '<|tool_calls_section_begin|><|tool_call_begin|>functions.now:3<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>';
    expect(recoverMessage({ content: t, reasoning: null }, opts()).calls[0]?.id).toBe('functions.now:3');
  });

  it('names the backend parser per variant (DeepSeek V3 vs V3.1)', () => {
    const v31 =
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    const v3 =
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    expect(recoverMessage({ content: v31, reasoning: null }, opts()).leaks[0]?.backendHint).toBe(
      'vllm --tool-call-parser deepseek_v31',
    );
    expect(recoverMessage({ content: v3, reasoning: null }, opts()).leaks[0]?.backendHint).toBe(
      'vllm --tool-call-parser deepseek_v3',
    );
  });

  it('a pinned parser list only tries those families', () => {
    const t = '[TOOL_CALLS]now[ARGS]{}';
    expect(recoverMessage({ content: t, reasoning: null }, opts({ parsers: ['hermes'] })).calls).toEqual([]);
    expect(
      recoverMessage({ content: t, reasoning: null }, opts({ parsers: ['mistral'] })).calls,
    ).toHaveLength(1);
    expect(() => recoverMessage({ content: t, reasoning: null }, opts({ parsers: ['nope'] }))).toThrow(
      /unknown parser/,
    );
  });

  it('leaves text untouched byte for byte when nothing is recovered', () => {
    const t = '  Some prose,\n\twith <b>tags</b> and {"json": true}  \n';
    expect(recoverMessage({ content: t, reasoning: null }, opts()).content).toBe(t);
  });

  it('joins text around a removed envelope with one newline', () => {
    const r = recoverMessage({ content: `A  \n\n${HERMES}\n\n  B`, reasoning: null }, opts());
    expect(r.content).toBe('A\nB');
  });

  it('does not promote a call from reasoning when the message has content', () => {
    const r = recoverMessage({ content: 'The answer is 4.', reasoning: `draft: ${HERMES}` }, opts());
    expect(r.calls).toEqual([]);
    expect(r.reasoning).toBe(`draft: ${HERMES}`);
    expect(r.leaks).toEqual([]);
  });

  it('startsInReasoning: everything before </think> is reasoning', () => {
    const r = recoverMessage(
      { content: `thinking...</think>\n\nAnswer.`, reasoning: null },
      opts({ startsInReasoning: true }),
    );
    expect(r).toMatchObject({ reasoning: 'thinking...', content: 'Answer.' });
  });

  it('without startsInReasoning a bare </think> stays content', () => {
    const r = recoverMessage({ content: 'a</think>b', reasoning: null }, opts());
    expect(r).toMatchObject({ reasoning: null, content: 'a</think>b' });
  });

  it('an undeclared tool is rejected with a reason', () => {
    const t = '<tool_call>{"name": "rm", "arguments": {}}</tool_call>';
    const r = recoverMessage({ content: t, reasoning: null }, opts());
    expect(r.content).toBe(t);
    expect(r.leaks[0]).toMatchObject({ outcome: 'rejected', reason: 'undeclared tool "rm"' });
  });

  it('one broken envelope does not hide a good call after it', () => {
    const t = `<tool_call>{oops}</tool_call> then ${HERMES}`;
    const r = recoverMessage({ content: t, reasoning: null }, opts());
    expect(r.calls.map((c) => c.name)).toEqual(['now']);
    expect(r.content).toBe('<tool_call>{oops}</tool_call> then');
    expect(r.leaks.map((l) => l.outcome)).toEqual(['unrecovered', 'recovered']);
  });
});

describe('createRecoveryStream', () => {
  it('streams prose immediately and holds back only a possible marker start', () => {
    const s = createRecoveryStream(opts());
    expect(s.push({ content: 'Hello wor' })).toEqual([{ type: 'content', text: 'Hello wor' }]);
    expect(s.push({ content: 'ld <tool' })).toEqual([{ type: 'content', text: 'ld' }]);
    // a complete call is held until the end (or a bare </think> making it a draft: engine/bare-think.ts)
    expect(
      s.push({ content: '_call>{"name": "get_weather", "arguments": {"days": 2}}</tool_call>' }),
    ).toEqual([]);
    expect(s.finish()).toEqual([
      { type: 'call-start', index: 0, id: 'call_0', name: 'get_weather' },
      { type: 'call-args', index: 0, fragment: '{"days":2}' },
      { type: 'call-end', index: 0 },
    ]);
    expect(s.leaks()).toHaveLength(1);
  });

  it('a </think> split across chunks', () => {
    const s = createRecoveryStream(opts());
    const ev: RecoveryEvent[] = [];
    for (const c of ['<th', 'ink>abc</th', 'in', 'k>\n\nDone']) ev.push(...s.push({ content: c }));
    ev.push(...s.finish());
    const text = (t: string) =>
      ev
        .filter((e) => e.type === t)
        .map((e) => ('text' in e ? e.text : ''))
        .join('');
    expect(text('reasoning')).toBe('abc');
    expect(text('content')).toBe('Done');
  });

  it('never ends an event in half a surrogate pair', () => {
    const s = createRecoveryStream(opts());
    const first = s.push({ content: 'ok \ud83d' });
    expect(first).toEqual([{ type: 'content', text: 'ok' }]);
    expect(s.push({ content: '\ude00!' })).toEqual([{ type: 'content', text: ' 😀!' }]);
  });

  it('promotes a call from reasoning only at finish', () => {
    const s = createRecoveryStream(opts());
    expect(s.push({ reasoning: `I'll call ${HERMES}` })).toEqual([
      { type: 'reasoning', text: `I'll call ${HERMES}` },
    ]);
    const end = s.finish();
    expect(end.map((e) => e.type)).toEqual(['call-start', 'call-args', 'call-end']);
    expect(s.leaks()[0]).toMatchObject({ source: 'reasoning', outcome: 'recovered' });
  });

  it('push after finish throws; finish twice is empty', () => {
    const s = createRecoveryStream(opts());
    s.finish();
    expect(s.finish()).toEqual([]);
    expect(() => s.push({ content: 'x' })).toThrow();
  });
});

describe('recoverFromErrorText', () => {
  it("reads the model output out of llama-server's parse error", () => {
    const msg = `Failed to parse input at pos 12: <tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>`;
    const r = recoverFromErrorText(msg, opts());
    expect(r?.calls).toEqual([
      {
        id: 'call_0',
        name: 'get_weather',
        arguments: '{"days":3}',
        format: 'qwen3-coder',
        source: 'error',
        repairs: [],
      },
    ]);
    expect(r?.leaks[0]?.source).toBe('error');
  });
  it('null for other errors or nothing recoverable', () => {
    expect(recoverFromErrorText('upstream exploded', opts())).toBeNull();
    expect(recoverFromErrorText('Failed to parse input at pos 0: </tool_call>', opts())).toBeNull();
  });
});

describe('detectFormat', () => {
  it('names the family and the backend parser, without declared tools', () => {
    expect(detectFormat('x <function=anything>\n<parameter=a>\n1\n</parameter>\n</function>')).toEqual({
      format: 'qwen3-coder',
      backendHint: 'vllm --tool-call-parser qwen3_coder',
    });
    expect(detectFormat('[TOOL_CALLS]foo[ARGS]{}')?.format).toBe('mistral');
    expect(detectFormat('just prose')).toBeNull();
  });
});
