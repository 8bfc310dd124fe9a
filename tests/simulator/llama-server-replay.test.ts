/**
 * Replays the 399 recorded llama-server exchanges (/work/shared/wire/llama-server/) against the
 * simulator's llama-server personality, configured like each recording's server, and compares
 * what is deterministic (see replay-compare.ts). The model's part of each answer (what it said
 * or called, where it was cut) is scripted from the recording through the x-sim-scenario header.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/index.js';
import { compareExchange, type Recording, scenarioFromRecording } from './replay-compare.js';

const DIR = '/work/shared/wire/llama-server';

/** Each recorded server configuration, as simulator options (flags from the recordings' README). */
const CONFIGS: Record<string, Omit<SimulatorOptions, 'personality'>> = {
  // The unmodified random model fails grammar set-up for "required": a real 400.
  'rawrandom-hermes': { modelName: 'llama-2-tiny-random.gguf', rejectRequired: true },
  // A model that never starts a call: "required" does not force one in llama-server.
  'random-hermes': { modelName: 'tiny-random-chatvocab.gguf', ignoreRequired: true },
  'toolcaller-hermes': { modelName: 'tiny-toolcaller.gguf', metrics: false },
  'toolcaller-qwen3coder': { modelName: 'tiny-toolcaller.gguf', metrics: false, template: 'qwen3-coder' },
  'toolcaller-llama31': { modelName: 'tiny-toolcaller-json.gguf', metrics: false, template: 'llama3' },
  'toolcaller-mistralnemo': { modelName: 'tiny-toolcaller.gguf', metrics: false, template: 'mistral' },
  apikey: { modelName: 'tiny', apiKey: 'test-secret', metrics: false },
};

/** Recordings not replayed, with the reason. */
function skipReason(rec: Recording, file: string): string | null {
  if (file.startsWith('disconnect__')) {
    return 'client-disconnect / X-Conversation-Id replay buffer: raw-socket recordings, the replay buffer is not simulated';
  }
  if (rec.request.path === '/props' && rec.status === 200)
    return '/props (server introspection) is not simulated';
  if (rec.request.path === '/slots') return '/slots (server introspection) is not simulated';
  if (rec.request.path === '/apply-template') return '/apply-template (template rendering) is not simulated';
  return null;
}

const files = existsSync(DIR)
  ? readdirSync(DIR)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];
const sims = new Map<string, Simulator>();
const outcome = { passed: 0, failed: 0, skipped: 0 };

async function replay(rec: Recording, sim: Simulator) {
  const headers: Record<string, string> = { ...rec.request.headers };
  const scenario = scenarioFromRecording(rec);
  if (scenario !== null)
    headers['x-sim-scenario'] = `b64:${Buffer.from(JSON.stringify(scenario)).toString('base64')}`;
  const hasBody = rec.request.method === 'POST';
  const body =
    rec.request.body_raw ?? (rec.request.body === undefined ? '' : JSON.stringify(rec.request.body));
  const res = await fetch(`${sim.origin}${rec.request.path}`, {
    method: rec.request.method,
    headers,
    body: hasBody ? body : undefined,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe
  .skipIf(files.length === 0)
  .concurrent('llama-server recordings replayed against the simulator', () => {
    beforeAll(async () => {
      for (const [name, options] of Object.entries(CONFIGS)) {
        sims.set(name, await createSimulator({ personality: 'llama-server', ...options }));
      }
    });
    afterAll(async () => {
      await Promise.all([...sims.values()].map((s) => s.close()));
      console.info(
        `llama-server replay: ${outcome.passed} passed, ${outcome.failed} failed, ${outcome.skipped} skipped of ${files.length}`,
      );
    });

    for (const file of files) {
      const rec = JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Recording;
      const reason = skipReason(rec, file);
      if (reason) {
        outcome.skipped++;
        it.skip(`${file} (${reason})`, () => {});
        continue;
      }
      it(file, async () => {
        const sim = sims.get(rec.server_config);
        if (!sim) throw new Error(`no simulator config for ${rec.server_config}`);
        const problems = compareExchange(rec, await replay(rec, sim));
        if (problems.length === 0) outcome.passed++;
        else outcome.failed++;
        expect(problems).toEqual([]);
      });
    }
  });
