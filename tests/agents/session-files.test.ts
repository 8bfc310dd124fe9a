/**
 * A session that carries files, as real ones do: a three-page PDF, a PNG screenshot and a command
 * that prints 1 MB, read one turn each by the real CLIs through toolproof on a llama-server whose
 * window (n_ctx) is small and enforced, multimodal (--mmproj) and text-only; toolproof reads
 * which from /props at start-up, as server/main.ts does. Every request the agent sends is
 * answered 200, the session ends with an answer, and each turn extends the one before byte for
 * byte upstream. Claude Code compacts twice in 32k and still answers the number the PDF's last
 * page holds. Not covered: what the others do with the PDF (Qwen Code wants pdftotext, opencode
 * drops it for a model not said to read PDFs, pi and Codex read the bytes). */
import { deflateSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { textPdf } from '../support/pdf.js';
import type { AgentId, PiApi } from './lib/agents.js';
import { describeRun, MARKUP, runCase } from './lib/case.js';
import { checkPrefix } from './lib/prefix.js';
import { type Api, describeAgents, tagContent } from './lib/suite.js';
import type { Task } from './lib/tasks.js';

/** A 160x100 RGB PNG (a gradient: no two rows alike), written with zlib alone. */
function screenshot(): Buffer {
  const w = 160;
  const h = 100;
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const raw = Buffer.alloc(h * (1 + w * 3));
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) raw.set([x, y * 2, (x + y) & 0xff], y * (1 + w * 3) + 1 + x * 3);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const SESSION_TASK: Task = {
  id: 'files-session',
  prompt:
    'Read report.pdf, look at screen.png, run the log dump command, then answer with the audit number the report gives, only the number.',
  files: {
    'report.pdf': textPdf(
      ['Quarterly report\nPage one: revenue.', 'Page two: costs.', 'Page three.\nThe audit number is 58213.'],
      { flate: true },
    ),
    'screen.png': screenshot(),
  },
  steps: [
    { op: 'read', path: 'report.pdf' },
    { op: 'read', path: 'screen.png' },
    { op: 'run', command: "head -c 1000000 /dev/zero | tr '\\0' x | fold -w 100" },
  ],
  final: '58213',
  finalFrom: /audit number is (\d+)/,
  expect: {},
};

interface Row {
  agent: AgentId;
  api: Api;
  /** llama-server's n_ctx. */
  window: number;
  /** Started with --mmproj (its /props says it sees; toolproof's `vision: auto` reads that). */
  vision: boolean;
  piApi?: PiApi;
}
/**
 * The agents whose own tools read images (Codex reads files through its shell only). Claude Code's
 * prompt is ~20k tokens, so 32k is its small window (it compacts twice in this session); pi's
 * is small enough for 8k.
 */
const ROWS: Row[] = [
  { agent: 'claude', api: 'messages', window: 32_768, vision: true },
  { agent: 'claude', api: 'messages', window: 32_768, vision: false },
  { agent: 'qwen', api: 'chat', window: 32_768, vision: true },
  { agent: 'opencode', api: 'chat', window: 32_768, vision: true },
  { agent: 'pi', api: 'chat', window: 8192, vision: true, piApi: 'openai-completions' },
];

describeAgents(
  'a session carrying a PDF, a screenshot and 1 MB of output (llama-server, small window)',
  () => {
    for (const row of ROWS) {
      const seeing = row.vision ? 'multimodal' : 'text-only';
      it(`${row.agent} (${row.api}, n_ctx ${row.window}, ${seeing}): every turn 200, the prefix holds`, async ({
        task: t,
      }) => {
        tagContent(t.meta, row.agent, row.api, `files-session-${seeing}`, `PDF + PNG + 1 MB, ${seeing}`);
        const r = await runCase({
          agent: row.agent,
          mode: 'clean',
          task: SESSION_TASK,
          via: 'toolproof',
          ...(row.piApi ? { piApi: row.piApi } : {}),
          model: {
            vision: row.vision,
            server: { personality: 'llama-server', window: row.window, imageTokens: 256 },
          },
          timeoutMs: 120_000,
        });
        const why = describeRun(r);
        expect(r.run.exitCode, why).toBe(0);
        expect(r.text, why).not.toBe('');
        expect(r.text, why).not.toMatch(MARKUP);
        // Every request the agent sent was answered 200: no overflow, no refused image reached it.
        const turns = r.logs.filter((l) => l.api === row.api);
        expect(turns.length, why).toBe(r.sent.length);
        for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
        // Turns extend the turn before byte for byte (Claude Code's compactions start new conversations).
        const check = checkPrefix(r.upstream);
        expect(check.checked, why).toBeGreaterThanOrEqual(1);
        expect(check.breaks, why).toEqual([]);
        const sent = JSON.stringify(r.sent.map((s) => s.body));
        const upstream = r.upstream.map((u) => u.rawBody).join('\n');
        // The screenshot: the agent sends it; it reaches a model that sees, and a note stands in for
        // it (from the first turn on, /props said so: never a refused attempt) on one that does not.
        // (Qwen Code re-encodes it: its own PNG, not the file's bytes.)
        expect(sent, why).toMatch(/"type":"image(_url)?"/);
        if (row.vision) expect(upstream, why).toContain('data:image/');
        else {
          expect(upstream, why).not.toContain('data:image/');
          expect(upstream, why).toContain('this model cannot read images');
        }
        if (row.agent === 'claude') {
          // Its Read tool sends the PDF as a document block; its text goes up, and the answer (after
          // two compactions in 32k) is the number only the PDF's last page holds.
          expect(sent, why).toContain('"type":"document"');
          expect(upstream, why).not.toContain('application/pdf;base64');
          expect(r.text, why).toMatch(/\b58213\b/);
        }
      });
    }
  },
);
