/** Formatting helpers for the bench's table. */

export const fmtMs = (ms: number): string => (Number.isFinite(ms) ? `${ms.toFixed(3)} ms` : 'n/a');
export const fmtDeltaMs = (ms: number): string =>
  Number.isFinite(ms) ? `${ms >= 0 ? '+' : '-'}${Math.abs(ms).toFixed(3)} ms` : 'n/a';
export const fmtRps = (rps: number): string => (Number.isFinite(rps) ? `${Math.round(rps)} req/s` : 'n/a');
export const fmtRatio = (r: number): string => (Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a');
export const fmtUs = (us: number): string => (Number.isFinite(us) ? `${us.toFixed(0)} µs` : 'n/a');
export const fmtMb = (mb: number): string => (Number.isFinite(mb) ? `${mb.toFixed(1)} MB` : 'n/a');

/** A plain-text table; the first row is the header. Columns are left-aligned. */
export function renderTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join(' | ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('-+-');
  const [header, ...body] = rows;
  return [line(header ?? []), rule, ...body.map(line)].join('\n');
}
