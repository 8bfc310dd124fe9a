/** Loads the parser fixture files (tests/fixtures/parsers/*.json) and runs them through the engine. */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../../protocol/openai.js';
import {
  collectEvents,
  createRecoveryStream,
  type RecoveryOptions,
  type RecoveryResult,
} from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';

export interface FixtureCase {
  name: string;
  /** Imported cases: `owner/repo path::test[id]` of the peer test the case was taken from (data only). */
  source?: string;
  /** Captures from the field: how the declared tools were reconstructed, or another remark. */
  note?: string;
  /** Set when toolproof deliberately expects something other than the peer does: why. */
  disagreement?: string;
  tools: { name: string; parameters?: JsonObject }[];
  text: string;
  reasoning?: string;
  startsInReasoning?: boolean | 'maybe';
  expect: {
    calls: { name: string; arguments: JsonObject }[];
    content: string | null;
    reasoning?: string | null;
    format?: string;
    outcome?: 'recovered' | 'unrecovered' | 'rejected' | 'none';
  };
}

export const FIXTURE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'parsers');

export function loadFixtures(): { file: string; cases: FixtureCase[] }[] {
  return readdirSync(FIXTURE_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({
      file: f.slice(0, -'.json'.length),
      cases: JSON.parse(readFileSync(join(FIXTURE_DIR, f), 'utf8')),
    }));
}

export function optionsFor(c: FixtureCase): RecoveryOptions {
  const tools = new Map<string, DeclaredTool>(c.tools.map((t) => [t.name, t]));
  let n = 0;
  return {
    tools,
    newId: () => `call_${n++}`,
    ...(c.startsInReasoning ? { startsInReasoning: c.startsInReasoning } : {}),
  };
}

/**
 * The case streamed one character at a time (reasoning first, then content), collected into a
 * result: what the conformance sets, bench/wild.ts and bench/peer.ts compare with the whole read.
 */
export function streamedByChar(c: FixtureCase): RecoveryResult {
  const s = createRecoveryStream(optionsFor(c));
  const events = [];
  for (const ch of c.reasoning ?? '') events.push(...s.push({ reasoning: ch }));
  for (const ch of c.text) events.push(...s.push({ content: ch }));
  events.push(...s.finish());
  return collectEvents(events, s);
}

/** Comparable view of a result (ids and repairs included: streaming must match them too). */
export function view(r: RecoveryResult) {
  return {
    content: r.content,
    reasoning: r.reasoning,
    calls: r.calls.map((c) => ({
      id: c.id,
      name: c.name,
      arguments: c.arguments,
      format: c.format,
      repairs: c.repairs,
    })),
    leaks: r.leaks,
  };
}
