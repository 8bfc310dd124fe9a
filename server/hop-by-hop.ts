/**
 * Headers that belong to one connection, not to the request or answer it carries (RFC 9110
 * §7.6.1, and the proxy-* pair): never copied from one hop to the next. The pass-through
 * (routes/passthrough.ts) and the worker relay (worker-relay.ts) each drop these and their own.
 */
export const HOP_BY_HOP_HEADERS = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
] as const;
