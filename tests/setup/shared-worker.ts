/**
 * Runs around every test file (vitest.config.ts `setupFiles`). Test files share a worker and
 * its module graph (`isolate: false`), so a file that changes process-wide state would leak it
 * into whichever files that worker runs next, and they would pass or fail by run order. The
 * two such states a test here could plausibly change are checked: a file that leaves
 * process.env or the working directory changed fails, naming what, and the state is put back
 * so the files after it still run clean.
 */
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, vi } from 'vitest';

/** TP_HEAP_LOG=path: a JSON line per file (worker pid, ms, heap and RSS after it) for suite-time work. */
const HEAP_LOG = process.env.TP_HEAP_LOG;
let file = '';
let started = 0;

let env: Record<string, string | undefined> = {};
let cwd = '';

beforeAll(() => {
  file = expect.getState().testPath ?? '';
  started = performance.now();
  env = { ...process.env };
  cwd = process.cwd();
});

afterAll(() => {
  if (HEAP_LOG) {
    const m = process.memoryUsage();
    appendFileSync(
      HEAP_LOG,
      `${JSON.stringify({ pid: process.pid, file, ms: Math.round(performance.now() - started), heapMb: Math.round(m.heapUsed / 1e6), rssMb: Math.round(m.rss / 1e6) })}\n`,
    );
  }
  // vi.stubEnv / vi.stubGlobal are fine: config unstubEnvs undoes them before the next test,
  // and this undoes the last test's.
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  const changed = [...new Set([...Object.keys(env), ...Object.keys(process.env)])].filter(
    (key) => env[key] !== process.env[key],
  );
  for (const key of changed) {
    if (env[key] === undefined) delete process.env[key];
    else process.env[key] = env[key];
  }
  const movedFrom = process.cwd() !== cwd ? process.cwd() : undefined;
  if (movedFrom) process.chdir(cwd);
  const problems = [
    ...(changed.length ? [`process.env ${changed.join(', ')}`] : []),
    ...(movedFrom ? [`the working directory (${movedFrom})`] : []),
  ];
  if (problems.length) {
    throw new Error(
      `this file changed ${problems.join(' and ')} and did not put it back; test files share a ` +
        'worker (vitest.config.ts isolate: false): pass settings to loadConfig/startStack, use ' +
        'vi.stubEnv (undone after the test), or run the code in a child process',
    );
  }
});
