/**
 * Copy as curl's here-document (server/capture/query.ts curlOf): the body it carries is the
 * attempt's, which holds what a client wrote. A line of it that were the here-document's end
 * would end the body there, and the shell of whoever pasted the command would run the lines
 * after it. The end is chosen so that no line is it, at a cost linear in the body.
 * (The server's own path, a command replayed against a simulator, is in inspect.test.ts.)
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { answer, type RequestView } from '../../server/capture/query.js';
import { Attempt, CaptureRing } from '../../server/capture/ring.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const execFileAsync = promisify(execFile);
const hasBash = spawnSync('bash', ['--version']).status === 0;

/** A ring holding one request whose one attempt was sent with `body`. */
function ringWith(body: string): CaptureRing {
  const ring = new CaptureRing({ maxBytes: 64 * 1024 * 1024, textChars: 16 * 1024 * 1024 });
  const w = ring.open({
    id: 'r1',
    api: 'chat',
    model: 'm',
    stream: false,
    session: 's',
    method: 'POST',
    path: '/v1/chat/completions',
  });
  w.attempt(new Attempt(1, 'http://127.0.0.1:9/v1', 0, 0, false, { text: body, cut: 0 }));
  return ring;
}

const curlOf = (ring: CaptureRing) => (answer(ring, { op: 'get', id: 'r1' }, 0) as RequestView).curl[0]!;

/** Lines that are the here-document ends the command could try first (64 of them, over and over). */
const hostile = (lines: number) =>
  Array.from({ length: lines }, (_, i) => `TOOLPROOF_BODY${'_'.repeat(i % 64)}`).join('\n');

describe('copy as curl: the body in its here-document', () => {
  it.skipIf(!hasBash)('ends after the whole body, whatever lines the body holds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-curl-'));
    try {
      // A curl that keeps what it was given on stdin, and a line of the body that, were it the
      // end, would run the next one.
      writeFileSync(join(dir, 'curl'), `#!/bin/sh\ncat > "${dir}/stdin"\n`);
      chmodSync(join(dir, 'curl'), 0o755);
      const body = `{"a":\n${hostile(3)}\ntouch "${dir}/ran"\n"b"}`;
      const command = curlOf(ringWith(body));
      await execFileAsync('bash', ['-c', command], {
        env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
      });
      expect(spawnSync('test', ['-e', join(dir, 'ran')]).status).not.toBe(0);
      // The body whole, and the here-document's closing newline (a body of several lines).
      expect(readFileSync(join(dir, 'stdin'), 'utf8')).toBe(`${body}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('costs what the body costs: a body of lines that are the ends tried first, x1 vs x4', () => {
    const s = measureScaling(
      (lines) => ringWith(hostile(lines)),
      (ring) => curlOf(ring),
      { from: 64, max: 1 << 16 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
