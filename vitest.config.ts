import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that cost far more than their size says, run first. Without a duration cache (a clean CI
 * clone) vitest starts the largest files first, which put the surface budget tables (two files of
 * 10 lines, the slowest in the suite) near the end: the other worker then sat idle while they
 * ran. A stale entry only costs ordering.
 *
 * Files that force full GCs (measuring retained memory) come first too: a worker runs file after
 * file in one heap (isolate: false below), and a full GC costs in proportion to that heap, which
 * grows with every file run before (the surface budget tables took twice the CPU late in a
 * worker). Then the slow ones, longest first (per-file seconds of a full run on 2 cores).
 */
const FULL_GC_FIRST = [
  // full GCs (budget tables: tests/support/cost-scaling.ts): the three surface tables first,
  // as before; then near-miss and lead-in-budget, which were unlisted, ran last in their worker
  // and took 40 s and 37 s of a loaded full run (6 s and 4 s alone); then the others. A run with
  // near-miss and lead-in-budget ahead of the tables took 13 s and 11 s for them, but the tables
  // took 166, 60 and 51 s at a load of 21 (25, 8 and 7 s before): not separable from the load on
  // that box, so the tables keep their place.
  'tests/hardening/surface-budgets.test.ts',
  'tests/hardening/surface-budgets-parsers-2.test.ts',
  'tests/hardening/surface-budgets-parsers-1.test.ts',
  'tests/parsers/near-miss.test.ts',
  'tests/parsers/lead-in-budget.test.ts',
  // unlisted until suite-speed5: late in a worker (heap past 200 MB) they took 12.7, 12.6 and
  // 7.1 s of CPU in a loaded full run; wild10 and peer-near-miss took 6.4 and 3.7 s early
  'tests/parsers/issue30-wild11-budget.test.ts',
  'tests/parsers/issue30-wild10-budget.test.ts',
  'tests/parsers/peer-near-miss-budget.test.ts',
  'tests/protocol/json-keys.test.ts',
  'tests/policies/tool-result-cap.test.ts',
  'tests/parsers/bare-think-maybe.test.ts',
  'tests/policies/held-answer-cap.test.ts',
  'tests/server/upstream-body.test.ts',
  'tests/policies/append-text.test.ts',
  'tests/server/chat/pipeline.test.ts',
  'tests/policies/stream-retention.test.ts',
  'tests/policies/schema-answer.test.ts',
  'tests/protocol/own-string.test.ts',
  'tests/server/chat/context.test.ts',
];

/**
 * A file that forces full GCs but is not listed above (a new budget file: it imports
 * tests/support/cost-scaling.ts or its surface-budget.ts, or exposes gc) still runs with them,
 * after the listed ones, instead of late in a worker whose heap has grown.
 */
function forcesFullGcs(file: string): boolean {
  try {
    return /cost-scaling\.js|surface-budget\.js|expose_gc/.test(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
}

const SLOW = [
  // slow, longest first (per-file seconds of a full run on the loaded 2-core box). New and
  // unlisted until speed10: 20 s of CPU, started 686 s into a 908 s loaded full run
  'tests/e2e/session-shapes.test.ts',
  // the parser fixtures through the proxy: ~40 s of CPU until speed10 (two requests for each of
  // 3,533 cases), ~13 s since (1,004 of them: the first of each shape, tests/e2e/parser-fixtures)
  'tests/e2e/parser-fixtures.test.ts',
  // unlisted until testspeed: the second longest file of a loaded full run (35 s: a child
  // process of ~14 s of CPU, 180 requests of 600 KB names), started at the 160th second; since
  // speed9 120 requests, ~10 s of CPU in the child, still among the longest
  'tests/redteam/inspector-hostile-shapes.test.ts',
  // new, unlisted until testwait (so it started after every listed file): ~25 s of a loaded box,
  // a stack and headless Chromium driven with the page's own waits
  'tests/e2e/inspect-ux.test.ts',
  'tests/hardening/huge-lists.test.ts',
  'tests/server/capture-bounds.test.ts',
  'tests/redteam/hostile-inputs.test.ts',
  'tests/hardening/stale-keepalive.test.ts',
  'tests/server/cluster.test.ts',
  'tests/server/startup.test.ts',
  'tests/parsers/hostile-markers-linear.test.ts',
  'tests/server/document-reader.test.ts',
  'tests/server/tracing.test.ts',
  'tests/e2e/messages-count-tokens.test.ts',
  'tests/e2e/prefix-contract.test.ts',
  'tests/e2e/degraded-content.test.ts',
  'tests/simulator/llama-server-replay.test.ts',
  'tests/policies/validate-arguments.test.ts',
  'tests/e2e/messages.test.ts',
  'tests/parsers/conformance.test.ts',
  'tests/redteam/broken-backends.test.ts',
  'tests/server/tracing-process.test.ts',
  'tests/server/config.test.ts',
  'tests/parsers/fuzz.test.ts',
  'tests/server/admission/http.test.ts',
  'tests/deploy/prometheus-live.test.ts',
  'tests/parsers/kit/long-tail.test.ts',
  'tests/hardening/request-products-server.test.ts',
  'tests/server/pipeline-faults.test.ts',
  'tests/server/pipeline.test.ts',
  'tests/hardening/many-choices.test.ts',
  'tests/hardening/unasked-choices.test.ts',
  'tests/policies/schema-budget.test.ts',
  'tests/cli/launch.test.ts',
  'tests/hardening/stale-keepalive-worked.test.ts',
  'tests/e2e/structured-output.test.ts',
  'tests/e2e/inspect-browser.test.ts',
  'tests/server/inspect.test.ts',
  'tests/hardening/metric-labels.test.ts',
  // unlisted until testspeed, 6-9 s each in a loaded full run: toolproof in child processes
  'tests/server/admission/reload-cluster.test.ts',
  'tests/server/inspect-cluster.test.ts',
  'tests/server/admission/simulator-admission.test.ts',
  'tests/server/builtin-simulator.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // listed full-GC files, unlisted full-GC files, the slow list, the rest
    const rank = (spec: TestSpecification) => {
      const file = relative(spec.project.config.root, spec.moduleId);
      const gc = FULL_GC_FIRST.indexOf(file);
      if (gc !== -1) return gc;
      if (forcesFullGcs(spec.moduleId)) return FULL_GC_FIRST.length;
      const slow = SLOW.indexOf(file);
      return FULL_GC_FIRST.length + 1 + (slow === -1 ? SLOW.length : slow);
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
    // expect.poll waits for a page or a server that refreshes on a timer of its own (the
    // inspector polls every second): vitest's 1 s default failed such waits on a loaded box.
    expect: { poll: { timeout: 5000 } },
    pool: 'forks',
    // One worker per core, and one more. Vitest's own default is cores - 1, which is a single
    // worker on the 2-core CI box: every file ran one after another while many of them mostly
    // wait (timers, child processes, sockets). With one per core, a worker that waits (a
    // keep-alive or queue timeout under test, a 500 ms "nothing more while nobody reads") left
    // its core idle: sampling the workers' states over a full run (R, or sleeping with no child
    // running) found both wanting CPU 76% of the time, one 19%, none 5%. A third worker fills
    // those waits: at least two want CPU 92% of the time, and the CPU spent did not grow (two
    // runs back to back on the loaded 2-core box: 293 s and 287 s of CPU, 414 s and 301 s wall;
    // the wall time also moves with the share a third process takes of a shared box). On the
    // quiet box, back to back (5f89dd0): 144 s wall with three, 161 s with two, 262 and 259 s
    // of CPU.
    maxWorkers: availableParallelism() + 1,
    // V8's GC on the worker's own thread: its helper threads (concurrent marking, parallel
    // scavenges) compete with the other worker for the second core, and on a box where both
    // cores are busy they add CPU rather than save wall time. Eight of the heaviest files (7,562
    // tests), interleaved runs on the loaded 2-core box: 79.7 and 86.4 s of CPU (154 and 179 s
    // wall) with it, 86.5 and 92.6 s (179 and 188 s) without.
    execArgv: ['--single-threaded-gc'],
    // A worker runs file after file in one module graph instead of a fresh process per file:
    // fastify, undici, openai, ajv and the server are loaded once per worker, not 99 times
    // (that start-up was about half the suite's CPU). Safe because no test mocks modules,
    // stubs globals or edits process.env; every server a test starts is its own instance with
    // its own metrics registry. A test that must change process-wide state belongs in a child
    // process (see tests/policies/heap-probe.ts).
    isolate: false,
    // ...and a file that changes process.env or the working directory fails, naming it.
    setupFiles: ['tests/setup/shared-worker.ts'],
    // The sources transpiled once per run for the tests that start toolproof or a probe as a
    // child process (tests/support/toolproof-process.ts nodeEntry): ~1 s of CPU less per child.
    globalSetup: ['tests/setup/transpiled.ts'],
    // vi.stubEnv / vi.stubGlobal are undone before the next test (and after a file's last one).
    unstubEnvs: true,
    unstubGlobals: true,
    sequence: { sequencer: SlowFirstSequencer },
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
