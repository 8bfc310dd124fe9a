import { describe, expect, it } from 'vitest';
import { runPool } from '../../cli/probe/pool.js';

describe('runPool', () => {
  it('keeps at most `limit` tasks in flight and results in task order', async () => {
    let inFlight = 0;
    let peak = 0;
    const tasks = Array.from({ length: 10 }, (_, i) => async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, (10 - i) * 2));
      inFlight--;
      return i;
    });
    expect(await runPool(tasks, 4)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(4);
  });

  it('handles no tasks and a limit above the task count', async () => {
    expect(await runPool([], 4)).toEqual([]);
    expect(await runPool([async () => 'a'], 8)).toEqual(['a']);
  });
});
