/** Shared helpers for the recovery engine's tests: the engine fed in pieces vs in one piece. */
import {
  collectEvents,
  createRecoveryStream,
  type RecoveryOptions,
  recoverMessage,
} from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import fc from 'fast-check';
import { expect } from 'vitest';
import { splitAt } from '../policies/helpers.js';

export function toolsOf(...tools: DeclaredTool[]): Map<string, DeclaredTool> {
  return new Map(tools.map((t) => [t.name, t]));
}

/** read_file(path) and write_file(path, content): the tools the perturbation tests declare. */
export const READ_FILE: DeclaredTool = {
  name: 'read_file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
export const WRITE_FILE: DeclaredTool = {
  name: 'write_file',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
  },
};

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

/**
 * The calls read in `text` (name, arguments, repairs) and its content, after checking that the
 * text streamed one character at a time reads the same: the recall rounds' edge tests.
 */
export function readBoth(text: string, tools: Map<string, DeclaredTool>, cut = false) {
  const r = recoverMessage({ content: text, reasoning: null, cut }, options(tools));
  const stream = createRecoveryStream(options(tools));
  const events = [];
  for (const ch of text) events.push(...stream.push({ content: ch }));
  events.push(...stream.finish({ cut }));
  const s = collectEvents(events, stream);
  const got = (x: typeof r) => ({
    calls: x.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs]),
    content: x.content,
  });
  expect(got(s), 'streamed one character at a time').toEqual(got(r));
  return got(r);
}

/**
 * The engine's raw events for `text` streamed in 64-char pushes: what the parser budget tests
 * (lead-in, peer near-miss, wild10 readings) time, x1 against x4.
 */
export function pushed64(tools: Map<string, DeclaredTool>) {
  return (text: string) => {
    let n = 0;
    const s = createRecoveryStream({ tools, newId: () => `c${n++}` });
    const events = [];
    for (let i = 0; i < text.length; i += 64) events.push(...s.push({ content: text.slice(i, i + 64) }));
    events.push(...s.finish());
    return events;
  };
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

/** Streaming `text` cut at `cuts` (taken modulo its length + 1) equals recovering it whole. */
export function expectSplitEqualsWhole(
  text: string,
  cuts: readonly number[],
  opts: () => RecoveryOptions,
): void {
  const pieces = splitAt(
    text,
    cuts.map((x) => x % (text.length + 1)),
  );
  expect(view(streamed(pieces, opts()))).toEqual(view(whole(text, opts())));
}

/** Property: for `count` cases picked by index, any random chunking equals recovering whole. */
export function assertRandomSplits(
  count: number,
  pick: (k: number) => { text: string; opts: () => RecoveryOptions },
  seed: number,
): void {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: count - 1 }), fc.array(fc.nat(), { maxLength: 8 }), (k, cuts) => {
      const c = pick(k);
      expectSplitEqualsWhole(c.text, cuts, c.opts);
    }),
    { numRuns: 300, seed },
  );
}
