/**
 * Turns a FamilySpec into a registered family (registry.ts lists them). The engine reads the
 * spec; the top-level fields are what the registry, scan plan and leak records name.
 */
import type { FamilyParser, FamilySpec } from './family.js';

export function defineFamily(spec: FamilySpec): FamilyParser {
  return { name: spec.name, markers: spec.markers, priority: spec.priority, backend: spec.backend, spec };
}
