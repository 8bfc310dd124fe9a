/** Shared helpers for the hardening tests: the engine fed in pieces vs in one piece. */
import {
  collectEvents,
  createRecoveryStream,
  type RecoveryOptions,
  recoverMessage,
} from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';

export function toolsOf(...tools: DeclaredTool[]): Map<string, DeclaredTool> {
  return new Map(tools.map((t) => [t.name, t]));
}

export function options(
  tools: Map<string, DeclaredTool>,
  extra: Partial<RecoveryOptions> = {},
): RecoveryOptions {
  let n = 0;
  return { tools, newId: () => `call_${n++}`, ...extra };
}

export function whole(text: string, opts: RecoveryOptions) {
  return recoverMessage({ content: text, reasoning: null }, opts);
}

/** Streams `pieces` and folds the events. */
export function streamed(pieces: Iterable<string>, opts: RecoveryOptions) {
  const s = createRecoveryStream(opts);
  const events = [];
  for (const p of pieces) events.push(...s.push({ content: p }));
  events.push(...s.finish());
  return collectEvents(events, s);
}

export function* chunks(text: string, size: number): Generator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

/** What the client sees: content, reasoning, calls (name + parsed arguments). */
export function view(r: ReturnType<typeof whole>) {
  return {
    content: r.content,
    reasoning: r.reasoning,
    calls: r.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
    leaks: r.leaks.map((l) => `${l.format}:${l.outcome}:${l.reason ?? ''}`),
  };
}
