/**
 * The human-readable report: the 2x2 table, the leak formats, the conformance checks and the
 * verdict. Pure string building; the CLI only prints it.
 */
import {
  CHOICE_MODES,
  type CellCounts,
  type CheckStatus,
  type LeakFormatSummary,
  type ProbeReport,
  QUESTIONS,
  type VerdictLevel,
} from './types.js';
import { findCell } from './verdict.js';

function formatCounts(c: CellCounts): string {
  return `tool ${c.tool} · leak ${c.leak} · prose ${c.prose} · err ${c.error}`;
}

const CHECK_MARK: Record<CheckStatus, string> = {
  ok: 'ok  ',
  problem: 'fix ',
  note: 'note',
  inconclusive: '??  ',
  error: 'err ',
};
const VERDICT_MARK: Record<VerdictLevel, string> = { ok: 'OK  ', warn: 'WARN', fail: 'FAIL' };

function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - [...text].length));
}

function renderTable(report: ProbeReport): string {
  const header = ['', ...CHOICE_MODES.map((mode) => `tool_choice=${mode}`)];
  const rows = QUESTIONS.map((question) => [
    question,
    ...CHOICE_MODES.map((mode) => {
      const cell = findCell(report.cells, question, mode);
      return cell ? formatCounts(cell.counts) : '-';
    }),
  ]);
  const widths = header.map((_, i) =>
    Math.max(...[header, ...rows].map((row) => [...(row[i] ?? '')].length)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, i) => pad(cell, widths[i] ?? 0))
      .join(' │ ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('─┼─');
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Where the backends parse this format natively: vLLM's --tool-call-parser, llama-server's chat format. */
function backendParserText(leak: LeakFormatSummary): string {
  const parsers = leak.backends;
  const parts = [
    parsers?.vllm ? `vLLM --tool-call-parser ${parsers.vllm}` : '',
    parsers?.llamacpp ? `llama-server --jinja (${parsers.llamacpp})` : '',
  ].filter(Boolean);
  if (parts.length > 0) return ` · handled natively by ${parts.join(', ')}`;
  return leak.backendHint ? ` · handled natively by ${leak.backendHint}` : '';
}

export function renderReport(report: ProbeReport): string {
  const out: string[] = [];
  const seconds = (report.durationMs / 1000).toFixed(1);
  const backend = report.backend.viaToolproof
    ? `toolproof in front of backend ${report.backend.kind}`
    : `backend ${report.backend.kind}`;
  out.push(
    `toolproof probe · ${report.baseUrl} · ${backend} · model ${report.model} · ${report.runs} run(s) per cell · ${seconds} s`,
  );
  out.push('');
  out.push(renderTable(report));
  out.push('');
  if (report.leakFormats.length > 0) {
    out.push('leaked formats (recognised by toolproof):');
    for (const leak of report.leakFormats) {
      const hint = backendParserText(leak);
      out.push(`  ${leak.format} ×${leak.count} (toolproof recovers ${leak.recovered})${hint}`);
    }
    out.push('');
  }
  if (report.checks.length > 0) {
    out.push('conformance:');
    const titleWidth = Math.max(0, ...report.checks.map((check) => check.title.length));
    for (const check of report.checks) {
      out.push(`  [${CHECK_MARK[check.status]}] ${pad(check.title, titleWidth)}  ${check.detail}`);
      if (check.status !== 'ok' && check.advice) out.push(`         → ${check.advice}`);
    }
    out.push('');
  }
  out.push('verdict:');
  for (const verdict of report.verdicts) out.push(`  ${VERDICT_MARK[verdict.level]} ${verdict.text}`);
  if (report.settings.length > 0) {
    out.push('');
    out.push(
      `toolproof settings for ${report.model}: ${report.settings.map((s) => `${s.path}: ${String(s.value)}`).join(', ')}`,
    );
  }
  return out.join('\n');
}
