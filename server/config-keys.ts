/**
 * The `keys` section of the YAML: client API keys with a name and limits (docs/operations.md).
 * Schema and types only; server/config.ts validates and freezes them, server/keys.ts enforces.
 */
import { createHash } from 'node:crypto';
import { PRIORITY_CLASSES, type PriorityClass } from './admission.js';

export interface ApiKeyEntry {
  /** The key's name: the log line, the trace, the `key` label of the per-client metrics. */
  readonly name: string;
  readonly key: string;
  /** Model names (globs) the key may use; absent: every model. */
  readonly models?: readonly string[];
  /** Per minute, for the process group (TOOLPROOF_WORKERS: held by the cluster primary). */
  readonly requestsPerMinute?: number;
  /** Prompt + completion tokens per minute, for the process group. */
  readonly tokensPerMinute?: number;
  /** Requests in flight at once, for the process group. */
  readonly concurrency?: number;
  /**
   * How long a request over `concurrency` waits for one of the key's requests to end before its
   * 429 (0: refused at once); default DEFAULT_KEY_QUEUE_TIMEOUT_MS (server/keys.ts).
   */
  readonly queueTimeoutMs?: number;
  /** Requests that may wait so, per process; beyond: the 429 at once. Default DEFAULT_KEY_QUEUE_SIZE. */
  readonly queueSize?: number;
  /** Its requests' class, and the most it may ask for with x-toolproof-priority. */
  readonly priority?: PriorityClass;
  /**
   * Its share of a replica's slots against other keys' when requests of one class wait
   * (server/admission-queue.ts): it goes first until it has `weight` times as many in flight as a
   * key of weight 1. Default 1.
   */
  readonly weight?: number;
  /**
   * What the inspector shows it (docs/inspect.md): `own` (a named key's default) the requests
   * made with its own key name, `all` every request. The flat keys (named "default") take
   * TOOLPROOF_API_KEYS_INSPECT: `own` beside named keys, `all` alone, unless it says.
   */
  readonly inspect?: 'own' | 'all';
  /**
   * A flat key's own token (flatKeyToken): the flat keys all carry one name, and the capture keeps
   * this beside it, so that the inspector reads a record's Responses store as its own key's
   * (routes/inspect-diff.ts). Not a secret's stand-in: the inspector's answers never carry it.
   */
  readonly token?: string;
}

/**
 * A flat key's token: a digest of the key, the same in every worker and across reloads (a
 * position in the list would name another key once the list changed), made once at start-up.
 */
export function flatKeyToken(key: string): string {
  return createHash('sha256').update(`toolproof flat key\0${key}`).digest('base64url').slice(0, 22);
}

/** The name flat keys (TOOLPROOF_API_KEYS, server.apiKeys) carry. */
export const UNNAMED_KEY = 'default';

export const keysSchema = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'key'],
    properties: {
      name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
      key: { type: 'string', minLength: 8 },
      models: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
      requestsPerMinute: { type: 'integer', minimum: 1 },
      tokensPerMinute: { type: 'integer', minimum: 1 },
      concurrency: { type: 'integer', minimum: 1 },
      queueTimeoutMs: { type: 'integer', minimum: 0 },
      queueSize: { type: 'integer', minimum: 0 },
      priority: { enum: [...PRIORITY_CLASSES] },
      weight: { type: 'number', exclusiveMinimum: 0, maximum: 1000 },
      inspect: { enum: ['own', 'all'] },
    },
  },
} as const;

/**
 * A key entry frozen as configured: its limits are the process group's, whatever
 * TOOLPROOF_WORKERS (the cluster primary holds them: server/group-admission.ts).
 */
export function frozenKey(entry: ApiKeyEntry): ApiKeyEntry {
  return Object.freeze({ ...entry, ...(entry.models ? { models: Object.freeze([...entry.models]) } : {}) });
}
