/**
 * server/log-redact: an upstream's error message is cut and the input values it echoes are
 * redacted before it is logged (in a request's log line: tests/hardening/upstream-hygiene.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { LOG_MESSAGE_MAX, redactForLog } from '../../server/log-redact.js';

const SECRET = 'my bank password is hunter2';

describe('redactForLog', () => {
  it('redacts the values pydantic-style errors echo, in every wording', () => {
    const fastapi = JSON.stringify([
      {
        type: 'string_type',
        loc: ['body', 'messages', 0, 'content'],
        msg: 'Input should be a valid string',
        input: { text: SECRET },
      },
    ]);
    const vllm = `[{'type': 'extra_forbidden', 'loc': ('body', 'foo'), 'msg': 'Extra inputs are not permitted', 'input': '${SECRET}'}]`;
    const pydantic = `1 validation error for ChatCompletionRequest\nmessages.0.content\n  Input should be a valid string [type=string_type, input_value={'text': "${SECRET} it's"}, input_type=dict]`;
    const list = `[{'msg': 'bad', 'input': ['${SECRET}', ("x", 1)], 'ctx': {}}]`;
    for (const message of [fastapi, vllm, pydantic, list]) {
      const out = redactForLog(message);
      expect(out, message).not.toContain('hunter2');
      expect(out).toContain('[redacted]');
    }
    expect(redactForLog(vllm)).toContain("'msg': 'Extra inputs are not permitted'");
    expect(redactForLog(pydantic)).toContain('input_type=dict');
  });

  it('cuts long messages, and an unclosed value is redacted to the end', () => {
    expect(redactForLog('x'.repeat(10_000))).toHaveLength(LOG_MESSAGE_MAX + 1);
    expect(redactForLog(`'input': '${SECRET} and more`)).toBe("'input': [redacted]");
    expect(redactForLog(`'input': [[[{'a': '${SECRET}`)).toBe("'input': [redacted]");
    expect(redactForLog('plain message')).toBe('plain message');
  });

  it('is linear in a hostile message (many markers, deep nesting)', () => {
    const hostile = `${"'input': ".repeat(50_000)}${'['.repeat(100_000)}`;
    const started = processCpuMs();
    expect(redactForLog(hostile).length).toBeLessThanOrEqual(LOG_MESSAGE_MAX + 1);
    expect(processCpuMs() - started).toBeLessThan(1_000);
  });
});
