import { describe, expect, it } from 'vitest';
import { backendParsers, detectLeak } from '../../cli/probe/detect.js';
import { declaredTools, RUN_PYTHON } from '../../cli/probe/prompts.js';

const tools = declaredTools([RUN_PYTHON]);
const hermesCall =
  '<tool_call>\n{"name": "run_python", "arguments": {"code": "print(17 * 23)"}}\n</tool_call>';

describe('detectLeak (toolproof parser engine)', () => {
  it('recognises a Hermes call in content, recoverable, with the backend parsers for it', () => {
    expect(detectLeak({ content: `Let me compute that.\n${hermesCall}`, reasoning: null }, tools)).toEqual({
      format: 'hermes',
      backendHint: expect.stringContaining('hermes'),
      backends: expect.objectContaining({ vllm: 'hermes' }),
      recovered: true,
      names: ['run_python'],
    });
  });

  it('a call to an undeclared tool is still a leak, just not recoverable', () => {
    const text = '<tool_call>\n{"name": "shell", "arguments": {"cmd": "ls"}}\n</tool_call>';
    expect(detectLeak({ content: text, reasoning: null }, tools)).toMatchObject({
      format: 'hermes',
      recovered: false,
      names: [],
    });
  });

  it('plain prose is not a leak', () => {
    expect(detectLeak({ content: '17 * 23 = 391.', reasoning: null }, tools)).toBeNull();
  });

  it("llama-server's parse-failure error carries the output: a leak by another route", () => {
    const errorText = `Failed to parse input at pos 0: ${hermesCall}`;
    expect(detectLeak({ content: null, reasoning: null, errorText }, tools)).toMatchObject({
      format: 'hermes',
      recovered: true,
    });
    expect(detectLeak({ content: null, reasoning: null, errorText: 'CUDA out of memory' }, tools)).toBeNull();
  });

  it('backendParsers reads the registry', () => {
    expect(backendParsers('hermes')).toMatchObject({ vllm: 'hermes' });
    expect(backendParsers('no-such-format')).toBeUndefined();
  });
});
