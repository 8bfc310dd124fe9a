/**
 * Vision learned from the backend's own refusal (policies/images/refusal.ts): a model whose
 * upstream refused an image is treated as `vision: false` from then on, per upstream and model as
 * sent upstream, for the route's fallbackTtlSeconds (the backend may be restarted with a vision
 * model or --mmproj). A model configured `vision: true` or `false` is the operator's word for
 * every request but the one refused: the backend's refusal is the truth about that request.
 */
import type { FallbackMemory } from '../fallback-memory.js';
import type { ResolvedRoute } from '../routing.js';

/** `route` with its images turned to notes (the images policy on). */
export function textOnlyRoute(route: ResolvedRoute): ResolvedRoute {
  return { ...route, settings: Object.freeze({ ...route.settings, vision: false as const }) };
}

/** The model's name as its upstream knows it: the memory's key. */
function upstreamName(route: ResolvedRoute, model: unknown): string {
  return route.upstreamModel ?? String(model);
}

/** `route`, text-only when its upstream refused an image of this model and `vision` is auto. */
export function withLearnedVision(
  route: ResolvedRoute,
  memory: FallbackMemory | undefined,
  model: unknown,
): ResolvedRoute {
  if (!memory || route.settings.vision !== 'auto') return route;
  return memory.isActive(route.client.label, upstreamName(route, model)) ? textOnlyRoute(route) : route;
}

/** Remember that `route`'s upstream refused this model's images. */
export function rememberTextOnly(
  route: ResolvedRoute,
  memory: FallbackMemory | undefined,
  model: unknown,
): void {
  memory?.remember(
    route.client.label,
    upstreamName(route, model),
    route.settings.fallbackTtlSeconds,
    route.name,
  );
}
