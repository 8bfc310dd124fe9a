/**
 * Turns a FamilySpec into a registered parser. parse/createStream run the shared engine with
 * this one family and WITHOUT the declared-tool rule (they report what the text says); the
 * safety rules apply in recover.ts.
 */
import { createEngineStream } from './engine.js';
import type { FamilyParser, FamilySpec } from './family.js';
import { buildScanPlan } from './scanner.js';
import type { ParseContext, ParsedCall, ParseResult, StreamEvent, StreamParser } from '../types.js';

export function defineFamily(spec: FamilySpec): FamilyParser {
  let plan: ReturnType<typeof buildScanPlan> | undefined;
  const open = (ctx: ParseContext): StreamParser & { broken(): boolean } => {
    plan ??= buildScanPlan([self]);
    let n = 0;
    const engine = createEngineStream({
      plan,
      tools: ctx.tools,
      newId: () => `call_${n++}`,
      requireDeclared: false,
      promote: false,
    });
    const pending = new Map<number, { name: string; args: string }>();
    const convert = (events: ReturnType<typeof engine.push>): StreamEvent[] => {
      const out: StreamEvent[] = [];
      for (const e of events) {
        if (e.type === 'content' || e.type === 'reasoning') out.push(e);
        else if (e.type === 'call-start') {
          pending.set(e.index, { name: e.name, args: '' });
          out.push({ type: 'call-start', index: e.index, name: e.name, id: e.id });
        } else if (e.type === 'call-args') {
          const p = pending.get(e.index);
          if (p) p.args += e.fragment;
          out.push(e);
        } else {
          const p = pending.get(e.index);
          const call: ParsedCall = { name: p?.name ?? '', arguments: JSON.parse(p?.args || '{}') };
          out.push({ type: 'call-end', index: e.index, call });
        }
      }
      return out;
    };
    return {
      push: (delta: string) => convert(engine.push({ content: delta })),
      finish: () => convert(engine.finish()),
      broken: () => engine.leaks().some((l) => l.outcome !== 'recovered'),
    };
  };
  const self: FamilyParser = {
    name: spec.name,
    markers: spec.markers,
    priority: spec.priority,
    backend: spec.backend,
    spec,
    parse(text: string, ctx: ParseContext): ParseResult | null {
      const s = open(ctx);
      const events = [...s.push(text), ...s.finish()];
      const calls: ParsedCall[] = [];
      let content = '';
      let reasoning = '';
      let touched = false;
      for (const e of events) {
        if (e.type === 'content') content += e.text;
        else if (e.type === 'reasoning') reasoning += e.text;
        else if (e.type === 'call-end') {
          calls.push(e.call);
          touched = true;
        }
      }
      const broken = s.broken();
      if (!touched && !broken && reasoning === '' && content === text) return null;
      return { calls, content, ...(reasoning ? { reasoning } : {}), ...(broken ? { broken } : {}) };
    },
    createStream: open,
  };
  return self;
}
