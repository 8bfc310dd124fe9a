/**
 * The Grafana dashboard and the Prometheus rules may only read metrics that exist: toolproof's
 * own (built from createMetrics(), so a renamed metric fails here), vLLM's (listed below with
 * their source), and the recording rules alerts.yml defines. A typo in a panel fails this test.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createMetrics } from '../../server/metrics.js';
import { metricNamesIn, metricNamesInVariableQuery } from './promql-names.js';

const ROOT = join(import.meta.dirname, '..', '..');
const DASHBOARD = join(ROOT, 'deploy/grafana/dashboards/toolproof.json');
const ALERTS = join(ROOT, 'deploy/prometheus/alerts.yml');

/**
 * vLLM's metrics the dashboard may use, as vLLM exposes them (counters with _total, histograms
 * expanded). Source: vllm/v1/metrics/loggers.py (PrometheusStatLogger) and
 * docs/design/metrics.md in vllm-project/vllm. vllm:gpu_cache_usage_perc is deliberately absent:
 * it was deprecated for vllm:kv_cache_usage_perc and is gone from current releases.
 */
const VLLM_COUNTERS = [
  'vllm:prompt_tokens_total',
  'vllm:generation_tokens_total',
  'vllm:request_success_total',
];
const VLLM_GAUGES = ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'];
const VLLM_HISTOGRAMS = [
  'vllm:time_to_first_token_seconds',
  'vllm:e2e_request_latency_seconds',
  'vllm:request_queue_time_seconds',
];
const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'];

const VLLM_METRICS = new Set([
  ...VLLM_COUNTERS,
  ...VLLM_GAUGES,
  ...VLLM_HISTOGRAMS.flatMap((h) => HISTOGRAM_SUFFIXES.map((s) => h + s)),
]);

/** Series names toolproof's /metrics exposes, and its own (non-default) metric families. */
async function toolproofExports(): Promise<{ series: Set<string>; families: string[] }> {
  const { registry } = createMetrics();
  const series = new Set<string>();
  const families: string[] = [];
  for (const m of await registry.getMetricsAsJSON()) {
    // The typings say a numeric enum; at runtime prom-client reports 'counter', 'histogram', ...
    const type = String(m.type);
    if (m.name.startsWith('toolproof_')) families.push(m.name);
    if (type === 'histogram') for (const s of HISTOGRAM_SUFFIXES) series.add(m.name + s);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) series.add(m.name + s);
    else series.add(m.name);
  }
  return { series, families };
}

type Rule = { record?: string; alert?: string; expr: string };

function loadRules(path = ALERTS): Rule[] {
  const doc = parseYaml(readFileSync(path, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

interface Query {
  where: string;
  expr: string;
  variable: boolean;
}

type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] };
type Dashboard = {
  panels: Panel[];
  templating?: { list: { name: string; query?: string | { query?: string } }[] };
};

function dashboardQueries(dashboard: Dashboard): Query[] {
  const out: Query[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? [])
        if (t.expr) out.push({ where: `panel "${p.title}"`, expr: t.expr, variable: false });
      if (p.panels) walk(p.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (q && v.name !== 'datasource') out.push({ where: `variable $${v.name}`, expr: q, variable: true });
  }
  return out;
}

function unknownNames(queries: Query[], known: Set<string>): string[] {
  const problems: string[] = [];
  for (const q of queries) {
    const names = q.variable ? metricNamesInVariableQuery(q.expr) : metricNamesIn(q.expr);
    for (const n of names) if (!known.has(n)) problems.push(`${q.where}: unknown metric "${n}" in ${q.expr}`);
  }
  return problems;
}

async function knownNames(): Promise<Set<string>> {
  const { series } = await toolproofExports();
  const records = loadRules()
    .map((r) => r.record)
    .filter((r): r is string => Boolean(r));
  return new Set([...series, ...VLLM_METRICS, ...records]);
}

const loadDashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

describe('deploy: dashboard and rules read only metrics that exist', () => {
  it('every metric in the Grafana dashboard is exported by toolproof, by vLLM, or recorded in alerts.yml', async () => {
    const queries = dashboardQueries(loadDashboard());
    expect(queries.length).toBeGreaterThan(20);
    expect(unknownNames(queries, await knownNames())).toEqual([]);
  });

  it('every metric in the alert and recording rules exists (recording rules may build on each other)', async () => {
    const rules = loadRules();
    expect(rules.some((r) => r.record === 'toolproof:leak_rate:ratio_rate10m')).toBe(true);
    const queries = rules.map((r) => ({
      where: `rule ${r.record ?? r.alert}`,
      expr: r.expr,
      variable: false,
    }));
    expect(unknownNames(queries, await knownNames())).toEqual([]);
  });

  it('rules read toolproof metrics and vLLM metrics only from the lists (no Prometheus-internal or foreign names)', () => {
    for (const rule of loadRules()) {
      for (const n of metricNamesIn(rule.expr)) expect(n, rule.expr).toMatch(/^(toolproof[_:]|vllm:)/);
    }
  });

  it('every toolproof metric family appears on the dashboard (a new metric needs a panel)', async () => {
    const { families } = await toolproofExports();
    const used = new Set(dashboardQueries(loadDashboard()).flatMap((q) => [...metricNamesIn(q.expr)]));
    const usedFamilies = new Set([...used].map((n) => n.replace(/_(bucket|sum|count)$/, '')));
    // Recording rules stand in for the raw counters they are built from.
    for (const rule of loadRules()) {
      if (rule.record && used.has(rule.record)) for (const n of metricNamesIn(rule.expr)) usedFamilies.add(n);
    }
    expect(families.filter((f) => !usedFamilies.has(f))).toEqual([]);
  });

  it('fails on a typo: a panel reading toolproof_leak_total (missing s) is reported', async () => {
    const dashboard = loadDashboard();
    dashboard.panels.push({
      title: 'typo',
      targets: [{ expr: 'sum by (model) (rate(toolproof_leak_total{model=~"$model"}[$__rate_interval]))' }],
    });
    const problems = unknownNames(dashboardQueries(dashboard), await knownNames());
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('"toolproof_leak_total"');
  });

  it('fails on a histogram read without its suffix, and on a misspelled vLLM metric', async () => {
    const known = await knownNames();
    const bad = [
      'histogram_quantile(0.99, sum by (le) (rate(toolproof_request_duration_seconds[5m])))',
      'rate(vllm:generation_tokens[5m])',
    ].map((expr) => ({ where: 'test', expr, variable: false }));
    expect(unknownNames(bad, known)).toHaveLength(2);
  });

  it('the name extractor skips functions, keywords, labels, durations and Grafana variables', () => {
    const grafanaVar = ['$', '{window}'].join(''); // a Grafana ${...} variable, spelled to keep linters quiet
    const expr =
      'sum by (model) (rate(toolproof_leaks_total{outcome=~"recovered|unrecovered",model=~"$model"}[$__rate_interval] offset 5m))' +
      ` / on (model) group_left () sum without (kind) (rate(toolproof_responses_total[${grafanaVar}])) > 1/60 and on (model) foo:bar:rate10m > bool 1e-3`;
    expect([...metricNamesIn(expr)].sort()).toEqual([
      'foo:bar:rate10m',
      'toolproof_leaks_total',
      'toolproof_responses_total',
    ]);
    expect([
      ...metricNamesInVariableQuery('label_values(toolproof_requests_total{route="x"}, model)'),
    ]).toEqual(['toolproof_requests_total']);
    expect([...metricNamesInVariableQuery('label_values(model)')]).toEqual([]);
  });
});
