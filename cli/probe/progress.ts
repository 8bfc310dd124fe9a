/**
 * Progress on stderr while the probe runs: one self-rewriting status line when stderr is a TTY,
 * otherwise terse lines (one per finished request) that read well in CI logs.
 */
import type { ProgressEvent } from './run-probe.js';

export interface ProgressSink {
  isTTY?: boolean;
  write(text: string): unknown;
}

export function createProgress(sink: ProgressSink): { onProgress(event: ProgressEvent): void; end(): void } {
  const tally = { tool: 0, leak: 0, prose: 0, error: 0 };
  let lineOpen = false;
  return {
    onProgress(event) {
      if (event.type === 'start') {
        if (!sink.isTTY) sink.write(`probe: ${event.total} requests\n`);
        return;
      }
      if (event.kind === 'tool_call') tally.tool++;
      else if (event.kind === 'leaked') tally.leak++;
      else if (event.kind === 'prose') tally.prose++;
      else if (event.kind === 'error') tally.error++;
      if (sink.isTTY) {
        const width = 24;
        const filled = Math.round((event.done / event.total) * width);
        const bar = '█'.repeat(filled) + '░'.repeat(width - filled);
        const counts = `tool ${tally.tool} · leak ${tally.leak} · prose ${tally.prose} · err ${tally.error}`;
        sink.write(`\r\x1b[2K${bar} ${event.done}/${event.total}  ${counts}  ${event.label}`);
        lineOpen = true;
      } else {
        sink.write(`probe: [${event.done}/${event.total}] ${event.label}: ${event.summary}\n`);
      }
    },
    end() {
      if (lineOpen) sink.write('\r\x1b[2K');
      lineOpen = false;
    },
  };
}
