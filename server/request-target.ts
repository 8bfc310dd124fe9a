/**
 * The one spelling of a request's path that the router judges and the pass-through sends
 * upstream (fastify's rewriteUrl, app.ts). A route was picked from the target as the client
 * spelled it, while the relay resolved it another way (WHATWG's URL parser): `//v1/chat/completions`
 * (what a client makes of a base URL ending in '/') read as the host "v1" and went upstream as
 * `/chat/completions`, and `/v1/./chat/completions`, `/v1%2Fchat%2Fcompletions` (uvicorn and
 * cpp-httplib decode `%2F`) or `/v1//chat/completions` reached the backend's chat endpoint raw,
 * past the harness. Here every spelling of a path is one path before routing, so whatever the
 * upstream would serve as a front door is served by the front door:
 *
 * - an absolute-form target (`POST http://host/v1/...`) keeps its path, query and all;
 * - `%XX` of an unreserved character or of `/` is the character (a backend decodes both);
 * - runs of `/` are one; `.` and `..` segments are resolved, never above the root;
 * - a trailing `/` is dropped (vLLM redirects it away, llama-server serves no such path);
 * - `/chat/completions` and `/responses` (what an OpenAI client asks with a base URL without
 *   `/v1`, and llama-server serves there too) are the `/v1` front doors.
 *
 * The fragment (`#...`), which no client sends, is dropped; the query is kept as sent. Case and
 * `;params` are kept: the path is case-sensitive (RFC 3986 §6.2.2.1) and neither vLLM nor
 * llama-server reads either, so such a path reaches no front door upstream either. One pass over
 * the target: linear in its length (bounded by node's 16 KB of headers).
 */

/** Whether a path needs more than the fast path (the common case: nothing to do). */
const NEEDS_WORK = /\/\/|\/\.|%|\/$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const UNRESERVED_OR_SLASH = /^[A-Za-z0-9\-._~/]$/;
const ALIASES = ['/chat/completions', '/responses'];
/** A target canonicalTarget may change: anything canonicalPath or the fragment would touch. */
const ODD_TARGET = /\/\/|\/\.|%|#|\/(?:\?|$)/;
const ALIASED = /^\/(?:chat\/completions|responses)(?:[/?]|$)/;

function decodeSome(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED_OR_SLASH.test(c) ? c : m;
  });
}

/** RFC 3986 §5.2.4 on a path whose runs of '/' are already one, segment by segment. */
function withoutDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const s = segments[i]!;
    if (s === '.') continue;
    if (s === '..') {
      out.pop();
      continue;
    }
    out.push(s);
  }
  // A path ending in a dot segment names a directory: the trailing '/' is dropped below anyway.
  return `/${out.join('/')}`;
}

/** The path part of a target, its canonical form. */
export function canonicalPath(path: string): string {
  let p = path;
  if (NEEDS_WORK.test(p)) {
    p = decodeSome(p).replace(/\/{2,}/g, '/');
    if (p.includes('/.')) p = withoutDotSegments(p);
    if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  }
  for (const alias of ALIASES) if (p === alias || p.startsWith(`${alias}/`)) return `/v1${p}`;
  return p;
}

/**
 * A request target (as node hands it: origin-form, absolute-form, `*`) -> the target routed and
 * relayed: its canonical path, then its query as sent. A target that is neither a path nor an
 * absolute URL (`*`, authority-form) is left as it is: no route serves it.
 */
export function canonicalTarget(target: string): string {
  // Nearly every request: a plain path (its query too, or not: only a false alarm costs more).
  if (target.charCodeAt(0) === 0x2f && !ODD_TARGET.test(target) && !ALIASED.test(target)) return target;
  let t = target;
  if (SCHEME.test(t)) {
    const afterScheme = t.indexOf('//') + 2;
    const end = t.slice(afterScheme).search(/[/?#]/);
    t = end < 0 ? '/' : t.slice(afterScheme + end);
    if (!t.startsWith('/')) t = `/${t}`;
  }
  if (!t.startsWith('/')) return target;
  const hash = t.indexOf('#');
  if (hash >= 0) t = t.slice(0, hash);
  const q = t.indexOf('?');
  const path = q < 0 ? t : t.slice(0, q);
  const query = q < 0 ? '' : t.slice(q);
  const canonical = canonicalPath(path);
  return canonical === path ? t : canonical + query;
}

/** The paths toolproof answers itself (its front doors, the model list, the inspector). */
const OWN_ROUTE =
  /^\/v1\/(?:chat\/completions|responses|messages|conversations|models)(?:\/|$)|^\/inspect(?:\/|$)/;

/**
 * Whether a canonical path that reached the pass-through is one of toolproof's own routes in
 * another case or with `;params` (`/V1/messages`, `/v1/chat/completions;x=1`): 'messages' for
 * the Messages API's, 'openai' for the rest, undefined for a path of the upstream's. Such a path
 * is a 404 in the API's own shape, not relayed raw to whatever the backend makes of it.
 */
export function misspeltOwnRoute(path: string): 'messages' | 'openai' | undefined {
  const folded = canonicalPath(path.toLowerCase().replace(/;[^/]*/g, ''));
  if (folded === path || !OWN_ROUTE.test(folded)) return undefined;
  return folded.startsWith('/v1/messages') ? 'messages' : 'openai';
}
