/**
 * Factory for the commonest long-tail shape: one JSON call object (or array of them) between an
 * open and a close tag, `OPEN{"name": …, "arguments": …}END`. A family of this shape is its
 * markers, which JSON openers it claims after OPEN (so families sharing a tag split it by what
 * follows), its priority and the backend parser that would have handled it.
 */
import type { FamilyParser } from '../engine/family.js';
import { defineFamily } from '../engine/define.js';
import { callsFromJson, defaultToCall } from './long-tail.js';
import type { BackendNames } from '../types.js';
import { closedEnvelope, startsWith } from './envelope.js';

export interface JsonEnvelopeSpec {
  name: string;
  open: string;
  end: string;
  /** JSON openers claimed right after `open` ('{', '[' or both). */
  claims: '{' | '[' | '{[';
  priority: number;
  backend: BackendNames;
}

export function jsonEnvelopeFamily(spec: JsonEnvelopeSpec): FamilyParser {
  return defineFamily({
    name: spec.name,
    markers: [spec.open],
    priority: spec.priority,
    backend: spec.backend,
    match: closedEnvelope({
      open: spec.open,
      end: spec.end,
      accept: startsWith(...spec.claims),
      read: (body, _ctx, { truncated }) => callsFromJson(body, defaultToCall, truncated),
    }),
  });
}
