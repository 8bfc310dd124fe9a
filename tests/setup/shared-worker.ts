/**
 * Runs around every test file (vitest.config.ts `setupFiles`). Test files share a worker and
 * its module graph (`isolate: false`), so a file that changes process-wide state would leak it
 * into whichever files that worker runs next, and they would pass or fail by run order. The
 * two such states a test here could plausibly change are checked: a file that leaves
 * process.env or the working directory changed fails, naming what, and the state is put back
 * so the files after it still run clean.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, beforeEach, expect, vi } from 'vitest';

/**
 * TP_HEAP_LOG=path: a JSON line per file (worker pid, start as epoch ms, wall ms, CPU ms of the
 * worker and of the child processes it waited for, the worker's whole CPU so far (its last line
 * less its files' own: what imports, collection and vitest between files cost), heap and RSS
 * after it, its expect() calls, its tests of 100 ms of CPU or more) for
 * suite-time work. CPU time is what a file costs the 2-core box whatever the load; wall minus CPU
 * is what it waits.
 */
const HEAP_LOG = process.env.TP_HEAP_LOG;
let file = '';
let started = 0;
/** The file's start, epoch ms (to line a log up with samples taken outside the worker). */
let startedAt = 0;
let cpu0 = 0;
let childCpu0 = 0;
/** The file's tests that took 100 ms of CPU or more (worker and children), with that CPU time. */
let slowTests: Array<[string, number]> = [];
let testCpu0 = 0;
/** expect() calls of the file's tests (vitest's assertionCalls, summed). */
let assertions = 0;

/** CPU ms of the waited-for child processes (Linux: cutime + cstime of /proc/self/stat). */
function childCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 16 and 17 of stat(5), counted from the state (field 3) here; 100 ticks a second
    return (Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return 0;
  }
}
const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

let env: Record<string, string | undefined> = {};
let cwd = '';

if (HEAP_LOG) {
  beforeEach(() => {
    testCpu0 = cpuMs() + childCpuMs();
  });
  afterEach(() => {
    assertions += expect.getState().assertionCalls;
    const ms = Math.round(cpuMs() + childCpuMs() - testCpu0);
    if (ms >= 100) slowTests.push([expect.getState().currentTestName ?? '', ms]);
  });
}

beforeAll(() => {
  file = expect.getState().testPath ?? '';
  slowTests = [];
  assertions = 0;
  started = performance.now();
  startedAt = Date.now();
  if (HEAP_LOG) {
    cpu0 = cpuMs();
    childCpu0 = childCpuMs();
  }
  env = { ...process.env };
  cwd = process.cwd();
});

afterAll(() => {
  if (HEAP_LOG) {
    const m = process.memoryUsage();
    appendFileSync(
      HEAP_LOG,
      `${JSON.stringify({ pid: process.pid, file, at: startedAt, ms: Math.round(performance.now() - started), cpuMs: Math.round(cpuMs() - cpu0), childCpuMs: childCpuMs() - childCpu0, workerCpuMs: Math.round(cpuMs()), heapMb: Math.round(m.heapUsed / 1e6), rssMb: Math.round(m.rss / 1e6), assertions, slowTests })}\n`,
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
