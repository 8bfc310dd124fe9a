/**
 * Which routes need a client key (server/keys.ts holds the keys, their names and limits).
 */
import type { ProtectableOp } from './config.js';

/**
 * Deny by default: with keys configured, every route needs one except these. The decision is
 * made on the route the router matched (request.routeOptions.url), never on the URL as the
 * client spelled it: "/%761/chat/completions" and "http://x/v1/chat/completions" match the
 * same route as "/v1/chat/completions" and so need the same key. Unmatched requests need one.
 */
/**
 * The inspector's routes (docs/inspect.md): behind the keys, which they also take as a Basic
 * password. Like every route toolproof answers itself, not counted against a key's limits (the
 * page polls every second or two: counted, an open inspector spent a key's minute).
 */
export function isInspectorRoute(routeUrl: string | undefined): boolean {
  return routeUrl === '/inspect' || routeUrl?.startsWith('/inspect/') === true;
}

export function isOpenRoute(routeUrl: string | undefined, protectOps: readonly ProtectableOp[]): boolean {
  if (routeUrl === '/health' || routeUrl === '/ready') return true;
  if (routeUrl === '/metrics') return !protectOps.includes('metrics');
  if (routeUrl === '/docs' || routeUrl?.startsWith('/docs/')) return !protectOps.includes('docs');
  return false;
}
