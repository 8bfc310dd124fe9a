import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { main } from '../../cli/main.js';
import { PROBE_HELP, parseProbeArgs, UsageError } from '../../cli/probe/command.js';
import type { ProbeReport } from '../../cli/probe/types.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';

function io(isTTY = false) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { isTTY, write: (t: string) => err.push(t) },
    },
  };
}

let sim: Simulator | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('parseProbeArgs', () => {
  it('reads every option, with defaults', () => {
    const command = parseProbeArgs([
      '--base-url',
      'http://gpu:8000/v1/',
      '--model',
      'qwen',
      '--runs',
      '2',
      '--timeout-ms',
      '500',
      '--json',
      '--write-config',
      'out.yaml',
    ]);
    expect(command).toMatchObject({
      json: true,
      writeConfig: 'out.yaml',
      options: {
        baseUrl: 'http://gpu:8000/v1',
        model: 'qwen',
        runs: 2,
        timeoutMs: 500,
        concurrency: 4,
        skipChecks: false,
      },
    });
  });

  it('takes the API key from the environment when --api-key is absent', () => {
    const command = parseProbeArgs(['--base-url', 'http://h/v1', '--model', 'm'], {
      TOOLPROOF_PROBE_API_KEY: 'k',
    });
    expect(command.options.apiKey).toBe('k');
  });

  it.each([
    [['--model', 'm'], /--base-url is required/],
    [['--base-url', 'http://h/v1'], /--model is required/],
    [['--base-url', 'h:8000', '--model', 'm'], /must be http or https/],
    [['--base-url', 'http://h/v1', '--model', 'm', '--runs', '0'], /--runs must be a positive integer/],
    [['--base-url', 'http://h/v1', '--model', 'm', '--bogus'], /Unknown option '--bogus'/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseProbeArgs(argv)).toThrow(UsageError);
    expect(() => parseProbeArgs(argv)).toThrow(message);
  });
});

describe('main', () => {
  it('prints help for the CLI and for probe', async () => {
    const a = io();
    expect(await main(['--help'], a.io)).toBe(0);
    expect(a.out.join('')).toContain('probe    diagnose');
    const b = io();
    expect(await main(['probe', '--help'], b.io)).toBe(0);
    expect(b.out.join('')).toBe(PROBE_HELP);
  });

  it('usage errors exit 2 with the message and the help on stderr', async () => {
    const a = io();
    expect(await main(['probe', '--model', 'm'], a.io)).toBe(2);
    expect(a.err.join('')).toMatch(/^toolproof probe: --base-url is required\n\nUsage: toolproof probe/);
    const b = io();
    expect(await main(['frobnicate'], b.io)).toBe(2);
    expect(b.err.join('')).toContain('unknown command "frobnicate"');
  });

  it('--json prints the report; without a TTY progress goes to stderr as terse lines', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'leak-hermes' });
    const run = io(false);
    const code = await main(
      ['probe', '--base-url', sim.url, '--model', 'm', '--runs', '1', '--json'],
      run.io,
    );
    expect(code).toBe(0);
    const report = JSON.parse(run.out.join('')) as ProbeReport;
    expect(report.version).toBe(1);
    expect(report.leakFormats.map((l) => l.format)).toEqual(['hermes']);
    expect(run.err[0]).toBe('probe: 12 requests\n');
    expect(run.err.some((line) => /^probe: \[\d+\/12\] memorizable\/auto #1: leaked hermes/.test(line))).toBe(
      true,
    );
  });

  it('on a TTY the progress line is rewritten in place and cleared; the table goes to stdout', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'tools' });
    const run = io(true);
    expect(
      await main(['probe', '--base-url', sim.url, '--model', 'm', '--runs', '1', '--no-checks'], run.io),
    ).toBe(0);
    expect(run.err.join('')).not.toContain('\n');
    expect(run.err.at(-1)).toBe('\r\x1b[2K');
    expect(run.out.join('')).toContain('memorizable   │ tool 1 · leak 0 · prose 0 · err 0');
    expect(run.out.join('')).not.toContain('conformance:');
  });

  it('--write-config merges the model section into the file', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    dir = await mkdtemp(join(tmpdir(), 'toolproof-probe-'));
    const file = join(dir, 'toolproof.yaml');
    await writeFile(file, 'models:\n  other:\n    upstream: http://a/v1\n');
    const run = io();
    const code = await main(
      ['probe', '--base-url', sim.url, '--model', 'qwen', '--runs', '1', '--write-config', file],
      run.io,
    );
    expect(code).toBe(0);
    const written = parse(await readFile(file, 'utf8')) as {
      models: Record<string, Record<string, unknown>>;
    };
    expect(written.models.other).toEqual({ upstream: 'http://a/v1' });
    expect(written.models.qwen).toMatchObject({ upstream: sim.url, forceToolUse: true });
    expect(run.err.join('')).toContain(`wrote models.qwen to ${file}`);
  });

  it('exits 1 when every request failed', async () => {
    const run = io();
    const code = await main(
      [
        'probe',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'm',
        '--runs',
        '1',
        '--no-checks',
        '--timeout-ms',
        '2000',
      ],
      run.io,
    );
    expect(code).toBe(1);
    expect(run.out.join('')).toContain('FAIL 4 of 4 requests failed');
  });

  it('--write-config writes nothing when every request failed (no "no problems found" for a backend never reached)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolproof-probe-'));
    const file = join(dir, 'toolproof.yaml');
    const before = 'models:\n  other:\n    upstream: http://a/v1\n';
    await writeFile(file, before);
    const run = io();
    const code = await main(
      [
        'probe',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'm',
        '--runs',
        '1',
        '--no-checks',
        '--timeout-ms',
        '2000',
        '--write-config',
        file,
      ],
      run.io,
    );
    expect(code).toBe(1);
    expect(await readFile(file, 'utf8')).toBe(before);
    expect(run.err.join('')).toContain(`${file} left as it was: every request failed`);
  });
});
