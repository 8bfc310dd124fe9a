/**
 * The probe end to end against the built-in backend simulator on 127.0.0.1: a backend whose
 * tool parser matches the model, one whose parser does not (calls leak into content), and
 * one whose chat template rejects unusual histories.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderReport } from '../../cli/probe/render.js';
import { type ProgressEvent, runProbe } from '../../cli/probe/run-probe.js';
import type { CheckId, ProbeReport } from '../../cli/probe/types.js';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/index.js';

const RUNS = 3;
let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function probe(
  options: SimulatorOptions,
  extra: { headers?: Record<string, string> } = {},
): Promise<ProbeReport> {
  sim = await createSimulator(options);
  return runProbe({ baseUrl: sim.url, model: 'probe-model', runs: RUNS, timeoutMs: 5000, ...extra });
}

function counts(report: ProbeReport) {
  return Object.fromEntries(report.cells.map((cell) => [`${cell.question}/${cell.toolChoice}`, cell.counts]));
}

function status(report: ProbeReport, id: CheckId) {
  return report.checks.find((check) => check.id === id)?.status;
}

const all = (tool: number, leak: number, prose: number, error: number) => ({ tool, leak, prose, error });

describe('runProbe against the simulator', () => {
  it('matched parser (vLLM, structured calls): every cell is a tool call, verdict OK', async () => {
    const report = await probe({ personality: 'vllm', scenario: 'tools' });
    expect(counts(report)).toEqual({
      'memorizable/auto': all(RUNS, 0, 0, 0),
      'memorizable/required': all(RUNS, 0, 0, 0),
      'unmemorizable/auto': all(RUNS, 0, 0, 0),
      'unmemorizable/required': all(RUNS, 0, 0, 0),
    });
    expect(report.backend.kind).toBe('vllm');
    expect(report.leakFormats).toEqual([]);
    // vLLM parses every historical `arguments` string: a malformed one is a 400, which toolproof's
    // history repair handles; that is the only finding for a matched backend.
    expect(report.verdicts.map((v) => v.level)).toEqual(['warn']);
    expect(report.verdicts[0]!.text).toContain('historyRepair.enabled');
    expect(report.settings).toEqual([{ path: 'historyRepair.enabled', value: true }]);
    expect(status(report, 'required-accepted')).toBe('ok');
    expect(status(report, 'named-tool-choice')).toBe('ok');
  });

  it('mismatched parser (qwen3-coder XML left in content): auto leaks, required does not, verdict names the flag', async () => {
    const report = await probe({ personality: 'vllm', scenario: 'leak-qwen3-coder' });
    expect(counts(report)).toEqual({
      'memorizable/auto': all(0, RUNS, 0, 0),
      'memorizable/required': all(RUNS, 0, 0, 0),
      'unmemorizable/auto': all(0, RUNS, 0, 0),
      'unmemorizable/required': all(RUNS, 0, 0, 0),
    });
    expect(report.leakFormats).toMatchObject([
      { format: 'qwen3-coder', count: 2 * RUNS, recovered: 2 * RUNS },
    ]);
    const [first] = report.verdicts;
    expect(first?.level).toBe('fail');
    expect(first?.text).toContain(
      'the model emits qwen3-coder tool calls but the backend returns them as content',
    );
    expect(first?.text).toContain(
      '`--enable-auto-tool-choice --tool-call-parser qwen3_coder`, or keep toolproof in front',
    );
    expect(first?.text).toContain('"required" hides this');
    expect(report.settings).toContainEqual({ path: 'recovery', value: 'auto' });
  });

  it('the matched and mismatched backends get different tables and verdicts', async () => {
    const matched = renderReport(await probe({ personality: 'vllm', scenario: 'tools' }));
    await sim?.close();
    const mismatched = renderReport(await probe({ personality: 'vllm', scenario: 'leak-qwen3-coder' }));
    expect(matched).toContain(`unmemorizable │ tool ${RUNS} · leak 0 · prose 0 · err 0`);
    expect(mismatched).toContain(`unmemorizable │ tool 0 · leak ${RUNS} · prose 0 · err 0`);
    expect(matched).not.toMatch(/FAIL/);
    expect(matched).toContain(`memorizable   │ tool ${RUNS} · leak 0 · prose 0 · err 0`);
    expect(mismatched).toMatch(/FAIL the model emits qwen3-coder/);
  });

  it('a per-request scenario header selects the scenario; unmemorizable questions hash a fresh string per run', async () => {
    const report = await probe({ personality: 'vllm' }, { headers: { 'x-sim-scenario': 'leak-hermes' } });
    expect(report.leakFormats.map((l) => l.format)).toEqual(['hermes']);
    const questions = (sim?.requests ?? [])
      .map((r) => r.body as { messages?: Array<{ role: string; content: string }> } | undefined)
      .flatMap((body) => body?.messages?.filter((m) => m.role === 'user').map((m) => m.content) ?? [])
      .filter((text) => text.includes('SHA-256'));
    expect(questions).toHaveLength(2 * RUNS);
    expect(new Set(questions).size).toBe(2 * RUNS);
  });

  it('prose under auto: forceToolUse; "required" rejected: noted as toolproof falling back to auto', async () => {
    const report = await probe({ personality: 'vllm', scenario: 'prose', rejectRequired: true });
    expect(counts(report)['memorizable/auto']).toEqual(all(0, 0, RUNS, 0));
    expect(counts(report)['memorizable/required']).toEqual(all(0, 0, 0, RUNS));
    expect(status(report, 'required-accepted')).toBe('problem');
    expect(report.checks.find((c) => c.id === 'required-accepted')?.advice).toMatch(/falls back to "auto"/);
    expect(report.settings).toContainEqual({ path: 'forceToolUse', value: true });
    expect(report.verdicts.map((v) => v.text).join('\n')).toMatch(/falls back to "auto" automatically/);
  });

  it('llama-server with a strict Mistral template: history findings map to historyRepair settings', async () => {
    const report = await probe({
      personality: 'llama-server',
      scenario: 'tools',
      strictHistory: true,
      nineCharIds: true,
      template: 'mistral',
    });
    expect(report.backend.kind).toBe('llama-server');
    expect(status(report, 'history-control')).toBe('ok');
    expect(status(report, 'non-nine-char-id')).toBe('problem');
    expect(status(report, 'unanswered-call')).toBe('problem');
    expect(report.settings).toEqual(
      expect.arrayContaining([
        { path: 'historyRepair.nineCharIds', value: true },
        { path: 'historyRepair.enabled', value: true },
      ]),
    );
  });

  it('pointed at toolproof in front of the mismatched backend: the leaks are gone, and it says toolproof answered', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'leak-qwen3-coder' });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    try {
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      const report = await runProbe({ baseUrl: `${address}/v1`, model: 'm', runs: RUNS, skipChecks: true });
      expect(report.backend).toMatchObject({ viaToolproof: true });
      for (const cell of report.cells) expect(cell.counts).toEqual(all(RUNS, 0, 0, 0));
      expect(report.verdicts.map((v) => v.level)).toEqual(['ok']);
      expect(renderReport(report)).toContain('toolproof in front of backend vllm');
      expect(report.verdicts[0]?.text).toMatch(/through toolproof: clients get calls/);
    } finally {
      await app.close();
    }
  });

  it('reports progress for every request', async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'tools' });
    const events: ProgressEvent[] = [];
    const report = await runProbe({
      baseUrl: sim.url,
      model: 'm',
      runs: 2,
      onProgress: (e) => events.push(e),
    });
    const total = 4 * 2 + report.checks.length; // one request per check (the clean history control included)
    expect(events[0]).toEqual({ type: 'start', total });
    expect(events.filter((e) => e.type === 'result')).toHaveLength(total);
    expect(events.at(-1)).toMatchObject({ type: 'result', done: total, total });
  });

  it('llama-server started with --api-key: the verdict says it wants a key and names --api-key, not "N requests failed"', async () => {
    sim = await createSimulator({ personality: 'llama-server', apiKey: 'sk-llama-only-0123456789' });
    const none = await runProbe({ baseUrl: sim.url, model: 'probe-model', runs: 1, timeoutMs: 5000 });
    expect(none.verdicts[0]).toEqual({
      level: 'fail',
      text: expect.stringMatching(
        /^the backend wants an API key \(HTTP 401 ×\d+ without one: a server started with --api-key\): pass it with --api-key KEY or TOOLPROOF_PROBE_API_KEY$/,
      ),
    });
    const wrong = await runProbe({
      baseUrl: sim.url,
      model: 'probe-model',
      runs: 1,
      timeoutMs: 5000,
      apiKey: 'sk-not-this-one',
    });
    expect(wrong.verdicts[0]?.text).toMatch(
      /^the backend refused the key sent \(HTTP 401 ×\d+\): it is not one it takes/,
    );
    expect(renderReport(wrong)).toContain('the backend refused the key sent');
  });

  it('an unreachable backend: every request is an error, no crash', async () => {
    const report = await runProbe({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', runs: 1, timeoutMs: 2000 });
    expect(report.cells.every((cell) => cell.counts.error === 1)).toBe(true);
    expect(report.verdicts[0]).toMatchObject({
      level: 'fail',
      text: expect.stringMatching(/4 of 4 requests failed/),
    });
    expect(report.backend.kind).toBe('unknown');
  });
});
