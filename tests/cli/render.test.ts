import { describe, expect, it } from 'vitest';
import { renderReport } from '../../cli/probe/render.js';
import type { ProbeReport } from '../../cli/probe/types.js';
import { decideVerdicts, recommendSettings, summarizeLeaks } from '../../cli/probe/verdict.js';
import { grid, PROSE, QWEN_LEAK, TOOL, times } from './report-builders.js';

function report(): ProbeReport {
  const cells = grid([TOOL, QWEN_LEAK, PROSE], times(3, TOOL), times(3, QWEN_LEAK), times(3, TOOL));
  const checks: ProbeReport['checks'] = [
    { id: 'required-accepted', title: 'tool_choice "required" accepted', status: 'ok', detail: 'accepted.' },
    {
      id: 'user-after-tool',
      title: 'user message right after a tool message accepted',
      status: 'problem',
      detail: 'rejected (HTTP 400: roles must alternate).',
      setting: { path: 'historyRepair.bridgeToolToUser', value: true },
      advice: 'set historyRepair.bridgeToolToUser: true.',
    },
  ];
  const leakFormats = summarizeLeaks(cells);
  return {
    version: 1,
    baseUrl: 'http://127.0.0.1:8000/v1',
    model: 'qwen3-coder',
    backend: { kind: 'vllm', ownedBy: 'vllm', viaToolproof: false },
    runs: 3,
    durationMs: 1234,
    cells,
    leakFormats,
    checks,
    verdicts: decideVerdicts(cells, leakFormats, checks, { kind: 'vllm', viaToolproof: false }),
    settings: recommendSettings(cells, checks),
  };
}

/** The 2x2 table: the report's second block (after the title line). */
function renderTable(r: ProbeReport): string {
  return renderReport(r).split('\n\n')[1]!;
}

describe('the table', () => {
  it('prints the 2x2 with counts per cell', () => {
    expect(renderTable(report())).toBe(
      [
        '              │ tool_choice=auto                  │ tool_choice=required',
        '──────────────┼───────────────────────────────────┼──────────────────────────────────',
        'memorizable   │ tool 1 · leak 1 · prose 1 · err 0 │ tool 3 · leak 0 · prose 0 · err 0',
        'unmemorizable │ tool 0 · leak 3 · prose 0 · err 0 │ tool 3 · leak 0 · prose 0 · err 0',
      ].join('\n'),
    );
  });

  it('formats a cell', () => {
    const cells = grid([...times(3, TOOL), ...times(2, QWEN_LEAK)], [], [], []);
    const memorizableAuto = renderTable({ ...report(), cells })
      .split('\n')[2]!
      .split(' │ ')[1]!
      .trim();
    expect(memorizableAuto).toBe('tool 3 · leak 2 · prose 0 · err 0');
  });
});

describe('renderReport', () => {
  it('has the table, the leak formats, the checks with their settings and the verdict', () => {
    const text = renderReport(report());
    expect(text).toContain('· backend vllm · model qwen3-coder · 3 run(s) per cell · 1.2 s');
    expect(text).toContain(
      'qwen3-coder ×4 (toolproof recovers 4) · handled natively by vLLM --tool-call-parser qwen3_coder, llama-server --jinja (Qwen3-Coder XML)',
    );
    expect(text).toMatch(/\[fix \] user message right after a tool message accepted\s+rejected/);
    expect(text).toContain('→ set historyRepair.bridgeToolToUser: true.');
    expect(text).toContain('FAIL the model emits qwen3-coder tool calls');
    expect(text).toContain('WARN with auto the model answers in prose');
    expect(text).toContain(
      'toolproof settings for qwen3-coder: forceToolUse: true, recovery: auto, historyRepair.bridgeToolToUser: true',
    );
  });
});
