/**
 * The real Prometheus binary against a real toolproof on loopback, in front of the built-in
 * vLLM simulator: after simulator traffic, the leak-rate recording rule from
 * deploy/prometheus/alerts.yml must give a real, non-zero value, the leak alert must go pending,
 * and every query on the Grafana dashboard must run.
 *
 * Skipped (with a message) when `prometheus` is not on PATH, unless CI is set: then the binary
 * is required (.ci/check-deploy.sh installs Debian's prometheus package).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { freePort } from '../support/toolproof-process.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ALERTS = join(ROOT, 'deploy/prometheus/alerts.yml');
const DASHBOARD = join(ROOT, 'deploy/grafana/dashboards/toolproof.json');

const PROMETHEUS = (() => {
  const r = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
})();
const IN_CI = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0';

if (!PROMETHEUS && !IN_CI) {
  console.warn(
    'SKIP tests/deploy/prometheus-live.test.ts: no `prometheus` binary on PATH ' +
      '(apt-get install prometheus, or run .ci/check-deploy.sh). With CI=true this fails instead.',
  );
}

describe('prometheus binary', () => {
  it.runIf(IN_CI)('is installed in CI (.ci/check-deploy.sh installs it)', () => {
    expect(
      PROMETHEUS,
      'CI is set but `prometheus` is not on PATH: run .ci/check-deploy.sh first',
    ).toBeTruthy();
  });
});

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

type Sample = { metric: Record<string, string>; value: [number, string] };

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

describe.skipIf(!PROMETHEUS)('Prometheus scraping toolproof (live)', () => {
  let sim: Simulator;
  let app: ToolproofApp;
  let toolproofUrl: string;
  let prom: ChildProcess;
  let promUrl: string;
  let promLog = '';
  let dir: string;
  const rules = (
    parseYaml(readFileSync(ALERTS, 'utf8')) as { groups: { rules: { record?: string; expr: string }[] }[] }
  ).groups.flatMap((g) => g.rules);

  async function query(expr: string): Promise<{ status: string; error?: string; result: Sample[] }> {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { result: Sample[] } };
    return {
      status: body.status,
      ...(body.error ? { error: body.error } : {}),
      result: body.data?.result ?? [],
    };
  }

  /** n chat completions with tools, 4 at a time. */
  async function traffic(n: number): Promise<void> {
    const one = async (i: number) => {
      const res = await fetch(`${toolproofUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'qwen3-coder',
          messages: [{ role: 'user', content: `What is the weather in city ${i}?` }],
          tools: TOOLS,
        }),
      });
      const body = (await res.json()) as { choices?: { message?: { tool_calls?: unknown[] } }[] };
      expect(res.status).toBe(200);
      // The leak was recovered: the client sees a structured call.
      expect(body.choices?.[0]?.message?.tool_calls).toHaveLength(1);
    };
    for (let i = 0; i < n; i += 4) await Promise.all([i, i + 1, i + 2, i + 3].filter((j) => j < n).map(one));
  }

  beforeAll(async () => {
    // A backend whose parser does not match the model: every answer is Qwen3-Coder XML in
    // content, and "required" is not enforced, so forced tool use cannot prevent the leak.
    sim = await createSimulator({
      personality: 'vllm',
      scenario: 'leak-qwen3-coder',
      ignoreRequired: true,
      modelName: 'qwen3-coder',
    });
    app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    toolproofUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    // As a deployment's readiness probe does: toolproof learns the models the upstream serves
    // (their metrics carry their own label from the first request).
    expect((await fetch(`${toolproofUrl}/ready`)).status).toBe(200);
    const simTarget = new URL(sim.url).host;

    dir = mkdtempSync(join(tmpdir(), 'toolproof-prom-'));
    // The real rules, evaluated every 250 ms instead of every 30 s, and scraped as often: the
    // test waits for two scrapes and an evaluation (7.8 s of a full run at 1 s intervals).
    const rulesText = readFileSync(ALERTS, 'utf8');
    expect(rulesText).toContain('interval: 30s');
    writeFileSync(join(dir, 'alerts.yml'), rulesText.replaceAll('interval: 30s', 'interval: 250ms'));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 250ms',
        '  evaluation_interval: 250ms',
        'rule_files:',
        '  - alerts.yml',
        'scrape_configs:',
        '  - job_name: toolproof',
        '    static_configs:',
        `      - targets: ["${new URL(toolproofUrl).host}"]`,
        '  - job_name: vllm',
        '    static_configs:',
        `      - targets: ["${simTarget}"]`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prom = spawn(
      PROMETHEUS!,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prom.stdout?.on('data', (d) => (promLog += d));
    prom.stderr?.on('data', (d) => (promLog += d));
    await waitFor(
      'Prometheus to be ready',
      async () => {
        if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}: ${promLog}`);
        return (await fetch(`${promUrl}/-/ready`)).ok ? true : undefined;
      },
      15_000,
    );
  });

  afterAll(async () => {
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom.once('exit', r));
      prom.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      if (prom.exitCode === null) prom.kill('SIGKILL');
    }
    await app?.close();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the leak-rate recording rule gives a real, non-zero value after simulator traffic', async () => {
    await traffic(4);
    // rate() needs two samples of a series with an increase between them: let one scrape
    // see the first batch, then send the second.
    await waitFor('the first scrape of toolproof_leaks_total', async () =>
      (await query('toolproof_leaks_total')).result.length > 0 ? true : undefined,
    );
    // Enough for the alert's traffic floor (one response with tools a minute, over 10 minutes).
    await traffic(20);

    const [sample] = await waitFor('toolproof:leak_rate:ratio_rate10m > 0', async () => {
      const r = await query('toolproof:leak_rate:ratio_rate10m');
      return r.result.some((s) => Number(s.value[1]) > 0) ? r.result : undefined;
    });
    expect(sample!.metric.model).toBe('qwen3-coder');
    const value = Number(sample!.value[1]);
    expect(Number.isFinite(value)).toBe(true);
    // Every response leaked exactly one call: about 1 leak per response.
    expect(value).toBeGreaterThan(0.5);
    expect(value).toBeLessThan(1.5);

    // The rule's expression itself, evaluated ad hoc, agrees.
    const expr = rules.find((r) => r.record === 'toolproof:leak_rate:ratio_rate10m')!.expr;
    const direct = await query(expr);
    expect(direct.status).toBe('success');
    expect(Number(direct.result[0]?.value[1])).toBeGreaterThan(0);

    const byFormat = await query('toolproof:leak_rate_by_format:ratio_rate10m');
    expect(byFormat.result.map((s) => s.metric.format)).toContain('qwen3-coder');
  });

  it('the leak alert goes pending on that traffic', async () => {
    const alerts = await waitFor('ToolproofLeakRateHigh pending', async () => {
      const r = await query('ALERTS{alertname="ToolproofLeakRateHigh"}');
      return r.result.length > 0 ? r.result : undefined;
    });
    expect(alerts[0]!.metric).toMatchObject({
      model: 'qwen3-coder',
      alertstate: 'pending',
      severity: 'warning',
    });
  });

  it('every Grafana dashboard query runs; leak and vLLM panels have data', async () => {
    type Panel = { title: string; targets?: { expr: string }[] };
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
    const required = [
      'Leak rate (10m)',
      'Leak rate per model and format',
      'Recovered vs unrecovered leaks',
      'Forced requests and final answers',
      'Request latency p50 / p99',
      'Token throughput',
      'Requests running / waiting',
    ];
    const evaluate = async () => {
      const failures: string[] = [];
      const withData = new Map<string, number>();
      for (const panel of dashboard.panels) {
        for (const t of panel.targets ?? []) {
          const expr = t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$model', '.*');
          const r = await query(expr);
          if (r.status !== 'success') failures.push(`${panel.title}: ${r.error} in ${expr}`);
          withData.set(panel.title, (withData.get(panel.title) ?? 0) + r.result.length);
        }
      }
      return { failures, empty: required.filter((title) => !((withData.get(title) ?? 0) > 0)) };
    };
    // Under load a rate() may need one more scrape before it has two samples: poll, then assert.
    let last = await evaluate();
    const deadline = Date.now() + 15_000;
    while (last.empty.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      last = await evaluate();
    }
    expect(last.failures).toEqual([]);
    expect(last.empty, 'panels without data').toEqual([]);
  });
});
