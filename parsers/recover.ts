/**
 * The recovery engine's public API (what server/pipeline calls). See README.md for the rules.
 */
import { backendHint, createEngineStream } from './engine/engine.js';
import type {
  OutputEnd,
  RecoveryEvent,
  RecoveryOptions,
  RecoveryResult,
  RecoveryStream,
  RecoveredCall,
} from './recover-types.js';
import { PARSERS, selectParsers } from './registry.js';
import { buildScanPlan, EnvelopeScanner, type ScanPlan } from './engine/scanner.js';
import type { LeakSource } from './types.js';

export type {
  OutputEnd,
  RecoveredCall,
  RecoveryEvent,
  RecoveryOptions,
  RecoveryResult,
  RecoveryStream,
} from './recover-types.js';

const ALL_PLAN: ScanPlan = buildScanPlan(PARSERS);

/**
 * Plans for pinned parser lists, by list. The lists come from config (few, fixed), and a plan
 * costs tens of µs to build (its marker regex compiles on first use): once per list, not per
 * request. Capped in case a caller passes lists of its own.
 */
const PINNED_PLANS = new Map<string, ScanPlan>();
const MAX_PINNED_PLANS = 64;

/** The scan plan for a parser selection (the same object for the same list). */
export function planFor(parsers: RecoveryOptions['parsers']): ScanPlan {
  if (parsers === undefined || parsers === 'all') return ALL_PLAN;
  const key = parsers.join('\n');
  let plan = PINNED_PLANS.get(key);
  if (plan === undefined) {
    plan = buildScanPlan(selectParsers(parsers));
    if (PINNED_PLANS.size < MAX_PINNED_PLANS) PINNED_PLANS.set(key, plan);
  }
  return plan;
}

/** Streaming recovery. Feed upstream deltas; concatenated content equals recoverMessage's content for any split. */
export function createRecoveryStream(opts: RecoveryOptions): RecoveryStream {
  return createEngineStream({
    plan: planFor(opts.parsers),
    tools: opts.tools,
    newId: opts.newId,
    startsInReasoning: opts.startsInReasoning === 'maybe' ? 'maybe' : opts.startsInReasoning === true,
    ...(opts.maxHeldBytes !== undefined ? { maxHeld: opts.maxHeldBytes } : {}),
    ...(opts.backend !== undefined ? { backend: opts.backend } : {}),
  });
}

/** Folds stream events into a message-level result. */
export function collectEvents(
  events: readonly RecoveryEvent[],
  stream: RecoveryStream,
  source?: LeakSource,
): RecoveryResult {
  let content = '';
  let reasoning = '';
  const calls: RecoveredCall[] = [];
  const leaks = stream.leaks();
  const recovered = leaks.filter((l) => l.outcome === 'recovered');
  for (const e of events) {
    if (e.type === 'content') content += e.text;
    else if (e.type === 'reasoning') reasoning += e.text;
    else if (e.type === 'call-start') {
      const rec = recovered[calls.length];
      calls.push({
        id: e.id,
        name: e.name,
        arguments: '',
        format: rec?.format ?? 'unknown',
        source: source ?? rec?.source ?? 'content',
        repairs: rec?.repairs ?? [],
      });
    } else if (e.type === 'call-args') {
      const c = calls[e.index];
      if (c) c.arguments += e.fragment;
    }
  }
  return {
    content: content === '' ? null : content,
    reasoning: reasoning === '' ? null : reasoning,
    calls,
    leaks: source ? leaks.map((l) => ({ ...l, source })) : leaks,
  };
}

/** Non-streaming recovery of one assistant message. */
export function recoverMessage(
  input: { content: string | null; reasoning: string | null } & OutputEnd,
  opts: RecoveryOptions,
): RecoveryResult {
  const s = createRecoveryStream(opts);
  const events = [
    ...s.push({
      ...(input.reasoning ? { reasoning: input.reasoning } : {}),
      ...(input.content ? { content: input.content } : {}),
    }),
    ...s.finish({ cut: input.cut === true }),
  ];
  return collectEvents(events, s);
}

const ERROR_PREFIX = 'Failed to parse input at pos ';

/**
 * llama-server answers HTTP 500 "Failed to parse input at pos N: <rest of the model output>"
 * when its own parser chokes. The text after the colon is the output from pos N on; recover
 * from it. null when the message is not that error or nothing was recovered.
 */
export function recoverFromErrorText(message: string, opts: RecoveryOptions): RecoveryResult | null {
  const at = message.indexOf(ERROR_PREFIX);
  if (at < 0) return null;
  let i = at + ERROR_PREFIX.length;
  while (i < message.length && message.charCodeAt(i) >= 0x30 && message.charCodeAt(i) <= 0x39) i++;
  if (!message.startsWith(': ', i)) return null;
  const raw = message.slice(i + 2);
  const s = createRecoveryStream(opts);
  const r = collectEvents([...s.push({ content: raw }), ...s.finish()], s, 'error');
  return r.calls.length > 0 ? r : null;
}

/** Which family is this text in (no tool declaration needed). For the probe CLI. */
export function detectFormat(text: string): { format: string; backendHint?: string } | null {
  const s = new EnvelopeScanner(ALL_PLAN, { tools: new Map() });
  for (const e of [...s.push(text), ...s.finish()]) {
    if (e.type !== 'envelope' || e.match.control) continue;
    if (e.match.calls.length === 0 && e.match.error === undefined) continue;
    const hint = backendHint(e.family, e.match.backendHint);
    return { format: e.family.name, ...(hint ? { backendHint: hint } : {}) };
  }
  return null;
}
