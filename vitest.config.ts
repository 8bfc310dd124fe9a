import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that cost far more than their size says, slowest first. Without a duration cache (a
 * clean CI clone) vitest starts the largest files first, which put parser-fixtures (a short
 * file that sends all 1,243 fixtures through the proxy, the slowest in the suite) near the end:
 * the other worker then sat idle while it ran. A stale entry only costs ordering.
 */
const SLOW_FIRST = [
  'tests/e2e/parser-fixtures.test.ts',
  'tests/server/cluster.test.ts',
  'tests/parsers/fuzz.test.ts',
  'tests/parsers/conformance.test.ts',
  'tests/parsers/kit/long-tail.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = SLOW_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // Array#sort is stable: everything else keeps vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // The real agent CLIs: their own run, `npm run test:agents` (vitest.agents.config.ts).
    exclude: [...configDefaults.exclude, 'tests/agents/**'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // One worker per core. Vitest's own default is cores - 1, which is a single worker on the
    // 2-core CI box: every file ran one after another while many of them mostly wait (timers,
    // child processes, sockets).
    maxWorkers: '100%',
    // A worker runs file after file in one module graph instead of a fresh process per file:
    // fastify, undici, openai, ajv and the server are loaded once per worker, not 99 times
    // (that start-up was about half the suite's CPU). Safe because no test mocks modules,
    // stubs globals or edits process.env; every server a test starts is its own instance with
    // its own metrics registry. A test that must change process-wide state belongs in a child
    // process (see tests/policies/heap-probe.ts).
    isolate: false,
    // ...and a file that changes process.env or the working directory fails, naming it.
    setupFiles: ['tests/setup/shared-worker.ts'],
    // vi.stubEnv / vi.stubGlobal are undone before the next test (and after a file's last one).
    unstubEnvs: true,
    unstubGlobals: true,
    sequence: { sequencer: SlowFirstSequencer },
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
