import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
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
    // process (see tests/hardening/heap-probe.ts).
    isolate: false,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
