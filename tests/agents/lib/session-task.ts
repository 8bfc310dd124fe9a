/**
 * The session a user's files make (tests/agents/session-files.test.ts, leaky-sessions.test.ts): a
 * three-page PDF, a PNG screenshot and a command that prints 1 MB, read one turn each.
 */
import { deflateSync } from 'node:zlib';
import { textPdf } from '../../support/pdf.js';
import type { Task } from './tasks.js';

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

export const SESSION_TASK: Task = {
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
