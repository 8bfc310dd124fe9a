/**
 * The capture's bounds (docs/inspect.md), in child processes with --expose-gc: the ring stays
 * under its size whatever the traffic (10,000 requests of 1 MB bodies), and with capture off a
 * heap snapshot taken after the requests ended holds no prompt text (with capture on, the same
 * probe finds it: the check can fail).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { nodeEntry } from '../support/toolproof-process.js';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('./capture-probe.ts', import.meta.url));

describe('capture bounds', () => {
  // At a tenth of every size (a 1 MB ring, 25.6 KB cuts, 100 KB bodies): the same ring logic,
  // the same 10,000 requests and evictions, the figures scaled back x10; a tenth of the copying.
  it('the ring stays under its size with 10,000 requests of 1 MB bodies, at a tenth of the sizes (heap measured)', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--expose-gc', ...nodeEntry(probe), 'ring', '10000', '10', '10'],
      {
        timeout: 120_000,
        maxBuffer: 1 << 20,
      },
    );
    const { growthMb, ringMaxMb, records } = JSON.parse(stdout) as {
      growthMb: number;
      ringMaxMb: number;
      records: number;
    };
    expect(ringMaxMb).toBeLessThanOrEqual(10);
    // It keeps the newest, not nothing: each holds two 256 KB cuts (counted at 2 bytes a character).
    expect(records).toBeGreaterThanOrEqual(4);
    // The ring's count is an upper bound of what it holds (two bytes a character).
    expect(growthMb).toBeLessThan(10);
  }, 150_000);

  describe('no prompt text in a heap snapshot after the requests ended', () => {
    let sim: Simulator;
    const dir = mkdtempSync(join(tmpdir(), 'tp-capture-'));
    beforeAll(async () => {
      sim = await createSimulator({ personality: 'vllm' });
    });
    afterAll(async () => {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    });

    // One child process writes both snapshots (capture off first, then on): one start-up.
    let snapshots: Promise<void> | undefined;
    const snapshotHolds = async (captureMb: string): Promise<boolean> => {
      snapshots ??= run(
        process.execPath,
        ['--expose-gc', ...nodeEntry(probe), 'snapshot', `${sim.url}`, '0,10', join(dir, 'capture')],
        { timeout: 120_000 },
      ).then(() => undefined);
      await snapshots;
      const out = join(dir, `capture-${captureMb}.heapsnapshot`);
      const marker = readFileSync(`${out}.marker`);
      const snapshot = readFileSync(out);
      expect(snapshot.length).toBeGreaterThan(1_000_000);
      return snapshot.includes(marker);
    };

    it('capture off (TOOLPROOF_CAPTURE_MB=0): the marker is nowhere', async () => {
      expect(await snapshotHolds('0')).toBe(false);
    }, 150_000);

    it('capture on: the same probe finds it (the check can fail)', async () => {
      expect(await snapshotHolds('10')).toBe(true);
    }, 150_000);
  });
});
