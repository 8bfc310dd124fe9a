import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../cli/probe/types.js';
import { backendFix, decideVerdicts, recommendSettings, summarizeLeaks } from '../../cli/probe/verdict.js';
import { CLAIM, ERR400, grid, PROSE, QWEN_LEAK, TOOL, times } from './report-builders.js';

describe('decideVerdicts', () => {
  it('all structured calls: one OK verdict, no settings', () => {
    const cells = grid(times(3, TOOL), times(3, TOOL), times(3, TOOL), times(3, TOOL));
    const verdicts = decideVerdicts(cells, summarizeLeaks(cells), []);
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0]).toMatchObject({
      level: 'ok',
      text: expect.stringMatching(/parser matches the model/),
    });
    expect(recommendSettings(cells, [])).toEqual([]);
  });

  it('leaks under auto while required is clean: names the parser flag and the required trap', () => {
    const cells = grid(times(3, QWEN_LEAK), times(3, TOOL), times(3, QWEN_LEAK), times(3, TOOL));
    const leaks = summarizeLeaks(cells);
    expect(leaks).toEqual([
      {
        format: 'qwen3-coder',
        backendHint: 'vllm --tool-call-parser qwen3_coder',
        backends: { vllm: 'qwen3_coder', llamacpp: 'Qwen3-Coder XML', sglang: 'qwen3_coder' },
        count: 6,
        recovered: 6,
      },
    ]);
    const [first] = decideVerdicts(cells, leaks, [], { kind: 'vllm', viaToolproof: false });
    expect(first?.level).toBe('fail');
    expect(first?.text).toContain(
      'the model emits qwen3-coder tool calls but the backend returns them as content',
    );
    expect(first?.text).toContain(
      'start vLLM with `--enable-auto-tool-choice --tool-call-parser qwen3_coder`, or keep toolproof in front',
    );
    expect(first?.text).toContain('"required" hides this');
    expect(recommendSettings(cells, [])).toEqual([{ path: 'recovery', value: 'auto' }]);
  });

  it('prose for memorizable questions under auto: keep forceToolUse on', () => {
    const cells = grid([PROSE, CLAIM, TOOL], times(3, TOOL), times(3, TOOL), times(3, TOOL));
    const verdicts = decideVerdicts(cells, [], []);
    expect(verdicts).toEqual([
      {
        level: 'warn',
        text: expect.stringMatching(
          /memorizable 2\/3, 1 claiming to have run the tool.*keep toolproof's forceToolUse on/,
        ),
      },
    ]);
    expect(recommendSettings(cells, [])).toEqual([{ path: 'forceToolUse', value: true }]);
  });

  it('never a tool call even for unmemorizable questions: suspects an unrecognised format', () => {
    const cells = grid(times(2, PROSE), times(2, TOOL), times(2, PROSE), times(2, TOOL));
    const [first] = decideVerdicts(cells, [], []);
    expect(first?.text).toMatch(/never calls the tool.*does not recognise/);
  });

  it('required rejected: says toolproof falls back to auto', () => {
    const cells = grid(times(2, TOOL), times(2, ERR400), times(2, TOOL), times(2, ERR400));
    const [first] = decideVerdicts(cells, [], []);
    expect(first).toMatchObject({
      level: 'warn',
      text: expect.stringMatching(/HTTP 400 ×4.*falls back to "auto"/),
    });
  });

  it('through toolproof: text answers are final_answer by design; leaks mean recovery is off', () => {
    const via = { kind: 'vllm', viaToolproof: true } as const;
    const memOnly = grid(times(2, PROSE), times(2, TOOL), times(2, TOOL), times(2, TOOL));
    expect(decideVerdicts(memOnly, [], [], via)).toEqual([
      { level: 'ok', text: expect.stringMatching(/memorizable questions with final_answer/) },
    ]);
    const guesses = grid(times(2, TOOL), times(2, TOOL), times(2, PROSE), times(2, TOOL));
    expect(decideVerdicts(guesses, [], [], via)[0]).toMatchObject({
      level: 'warn',
      text: expect.stringMatching(/guesses/),
    });
    const leaking = grid(times(2, QWEN_LEAK), times(2, TOOL), times(2, TOOL), times(2, TOOL));
    expect(decideVerdicts(leaking, summarizeLeaks(leaking), [], via)[0]?.text).toMatch(
      /even through toolproof.*recovery: auto/,
    );
  });

  it('history problems become one verdict listing the settings', () => {
    const cells = grid(times(1, TOOL), times(1, TOOL), times(1, TOOL), times(1, TOOL));
    const checks: CheckResult[] = [
      {
        id: 'non-nine-char-id',
        title: 'ids',
        status: 'problem',
        detail: 'rejected',
        setting: { path: 'historyRepair.nineCharIds', value: true },
      },
    ];
    const verdicts = decideVerdicts(cells, [], checks);
    expect(verdicts).toEqual([
      { level: 'warn', text: expect.stringContaining('historyRepair.nineCharIds: true') },
    ]);
    expect(recommendSettings(cells, checks)).toEqual([{ path: 'historyRepair.nineCharIds', value: true }]);
  });
});

describe('backendFix', () => {
  const hermes = { backends: { vllm: 'hermes', llamacpp: 'Hermes 2 Pro' } };
  it('names the flag of the backend that answered', () => {
    expect(backendFix(hermes, 'vllm')).toBe(
      'start vLLM with `--enable-auto-tool-choice --tool-call-parser hermes`',
    );
    expect(backendFix(hermes, 'llama-server')).toBe(
      "start llama-server with `--jinja` and the model's own chat template (it then parses the Hermes 2 Pro format)",
    );
    expect(backendFix(hermes, 'unknown')).toMatch(/^start vLLM with .*hermes`? \(llama-server: `--jinja`/);
  });

  it('falls back on the engine hint for formats the registry does not describe', () => {
    expect(backendFix({ backendHint: 'vllm --tool-call-parser pythonic' }, 'vllm')).toBe(
      'start vLLM with `--tool-call-parser pythonic`',
    );
    expect(backendFix({}, 'vllm')).toMatch(/does not recognise/);
  });
});
