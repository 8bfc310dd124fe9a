import { defineConfig } from 'vitest/config';

/**
 * `npm run test:agents`: the real agent CLIs (scripts/install-agents.mjs installs them outside the
 * clone) run their whole loop through toolproof against the scripted small model. Not part of
 * `npm test`. Each test runs one agent process; a file runs its cases a few at a time.
 */
export default defineConfig({
  test: {
    include: ['tests/agents/**/*.test.ts'],
    globalSetup: ['tests/agents/setup.ts'],
    testTimeout: 200_000,
    hookTimeout: 200_000,
    pool: 'forks',
    maxWorkers: 2,
    maxConcurrency: 3,
    reporters: ['default', './tests/agents/lib/results-reporter.ts'],
  },
});
