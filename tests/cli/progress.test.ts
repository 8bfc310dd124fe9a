import { describe, expect, it } from 'vitest';
import { createProgress } from '../../cli/probe/progress.js';

function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (text: string) => writes.push(text) };
}

describe('createProgress', () => {
  it('without a TTY writes one terse line per request', () => {
    const out = sink(false);
    const progress = createProgress(out);
    progress.onProgress({ type: 'start', total: 2 });
    progress.onProgress({
      type: 'result',
      done: 1,
      total: 2,
      label: 'memorizable/auto #1',
      summary: 'leaked hermes (recoverable)',
      kind: 'leaked',
    });
    progress.onProgress({
      type: 'result',
      done: 2,
      total: 2,
      label: 'check required',
      summary: 'error 400: nope',
    });
    progress.end();
    expect(out.writes).toEqual([
      'probe: 2 requests\n',
      'probe: [1/2] memorizable/auto #1: leaked hermes (recoverable)\n',
      'probe: [2/2] check required: error 400: nope\n',
    ]);
  });

  it('on a TTY rewrites one status line and clears it at the end', () => {
    const out = sink(true);
    const progress = createProgress(out);
    progress.onProgress({ type: 'start', total: 4 });
    progress.onProgress({
      type: 'result',
      done: 1,
      total: 4,
      label: 'unmemorizable/required #1',
      summary: 'tool call (run_python)',
      kind: 'tool_call',
    });
    progress.end();
    expect(out.writes[0]).toMatch(
      /^\r\x1b\[2K█{6}░{18} 1\/4 {2}tool 1 · leak 0 · prose 0 · err 0 {2}unmemorizable\/required #1$/,
    );
    expect(out.writes.at(-1)).toBe('\r\x1b[2K');
    expect(out.writes.join('')).not.toContain('\n');
  });
});
