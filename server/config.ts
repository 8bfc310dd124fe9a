/**
 * Configuration: environment variables plus an optional YAML file (TOOLPROOF_CONFIG), validated
 * once at start-up with one precise message per bad key, then frozen. Nothing falls back
 * silently: an unknown key or a wrong type stops the process with the key's path in the message.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { PARSER_NAMES } from '../parsers/registry.js';
import { DEFAULT_MODEL_SETTINGS, type ModelSettings } from '../protocol/settings.js';
import {
  type AdmissionSettings,
  DEFAULT_ADMISSION,
  PRIORITY_CLASSES,
  type PriorityClass,
} from './admission.js';
import { type ApiKeyEntry, flatKeyToken, frozenKey, keysSchema, UNNAMED_KEY } from './config-keys.js';
import { DEFAULT_STREAM_KEEPALIVE_MS } from './keep-alive.js';
import { type TracingSettings, TracingSettingsError, tracingSettings } from './tracing/settings.js';
import { policySettingsSchema } from '../policies/registry.js';

export const DEFAULT_PORT = 8787; // clashes with neither vLLM's 8000 nor llama-server's 8080
export const DEFAULT_BODY_LIMIT_BYTES = 32 * 1024 * 1024;
/** Receiving a whole request (headers and body) from a client; slow senders are cut with 408. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Receiving a request's headers. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
/** Ops endpoints that TOOLPROOF_PROTECT_OPS may put behind the API keys (/health and /ready stay open). */
export const PROTECTABLE_OPS = ['metrics', 'docs'] as const;
export type ProtectableOp = (typeof PROTECTABLE_OPS)[number];

export interface Timeouts {
  /** TCP/TLS connect to an upstream. */
  connectMs: number;
  /** From sending the request to the upstream's response headers (waiting for the first token). */
  firstByteMs: number;
  /** Longest silence between two body chunks of an upstream response. */
  idleMs: number;
}

/** Session affinity over the replicas of one upstream (docs/affinity.md). */
export interface AffinityConfig {
  /** false: plain balancing (undici BalancedPool), every turn to any replica. */
  enabled: boolean;
  /** A replica with this many requests in flight is saturated: new conversations go to the least loaded. */
  maxInflight: number;
}

export const DEFAULT_AFFINITY: AffinityConfig = Object.freeze({ enabled: true, maxInflight: 64 });

/** Admission for one upstream (server/admission.ts), as configured: the group's, whatever the workers. */
export interface UpstreamAdmission extends AdmissionSettings {
  /** vLLM started with `--scheduling-policy priority`: each request's `priority` field is set from its class. */
  schedulingPriority: boolean;
}

export interface UpstreamTarget {
  /** OpenAI base URLs including the path prefix, e.g. http://gpu:8000/v1; replicas of one deployment. */
  urls: readonly string[];
  apiKey?: string;
  /** Admission per replica of this upstream; absent: every request goes upstream at once. */
  admission?: UpstreamAdmission;
}

export interface ModelRoute {
  /** The model name clients send. */
  name: string;
  upstream: UpstreamTarget;
  /** Rename the model on the way upstream (e.g. clients say "qwen", vLLM serves "Qwen/Qwen3-8B"). */
  upstreamModel?: string;
  settings: ModelSettings;
  /** The priority class of this model's requests (a side model: low or background). */
  priority?: PriorityClass;
  /** Models tried in order when this one fails before the first byte reached the client. */
  fallback?: readonly string[];
  /** The model for prompts beyond this one's context window. */
  longContext?: string;
  /** This model's context window in tokens (YAML); the long-context route compares with it. */
  contextWindow?: number;
}

/** A model-name pattern (glob or exact alias) and the configured model it goes to. */
export interface RouteRule {
  match: readonly string[];
  model: string;
}

export interface Config {
  host: string;
  port: number;
  logLevel: string;
  bodyLimitBytes: number;
  apiKeys: readonly string[];
  /**
   * Every client key with its name and limits: the YAML's `keys`, then the flat keys
   * (TOOLPROOF_API_KEYS or server.apiKeys) named "default". Empty: no key needed.
   */
  keys: readonly ApiKeyEntry[];
  /** The separate keys file read (TOOLPROOF_KEYS_FILE or the YAML's `keysFile`), watched with the YAML. */
  keysFile?: string;
  /** Ops endpoints that need a key too (when apiKeys is set); by default they are open. */
  protectOps: readonly ProtectableOp[];
  /** Allowed browser origins for CORS: ['*'] (any), a list, or [] (CORS off). */
  corsOrigins: readonly string[];
  /** Limits on receiving a client's request (not on sending the response: streams may run long). */
  clientTimeouts: Readonly<{ requestMs: number; headersMs: number }>;
  timeouts: Timeouts;
  shutdownGraceMs: number;
  /** A keep-alive on a stream after this much silence (server/keep-alive.ts); 0: none. */
  streamKeepAliveMs: number;
  /** Used for models the YAML does not map (TOOLPROOF_UPSTREAM_URL). */
  defaultUpstream?: UpstreamTarget;
  /** Settings for models the YAML does not map. */
  defaults: ModelSettings;
  /** Null-prototype: client-supplied model names ("constructor", "__proto__") never hit Object's members. */
  models: Readonly<Record<string, ModelRoute>>;
  /** Names the YAML does not map, matched in order (aliases and globs) to a mapped model. */
  routes: readonly RouteRule[];
  /** true when no upstream is configured: main.ts starts the built-in simulator. */
  simulator: boolean;
  /**
   * Simulator mode: the YAML's `admission` (or TOOLPROOF_ADMISSION_CONCURRENCY) for the built-in
   * simulator, which main.ts makes the default upstream (there is no defaultUpstream to hold it).
   */
  simulatorAdmission?: UpstreamAdmission;
  /** Save each attempt's raw upstream response here (diagnosis; off by default). */
  rawDumpDir?: string;
  /** Session affinity over replicas; DEFAULT_AFFINITY when absent. */
  affinity?: AffinityConfig;
  /** OpenTelemetry tracing, when the standard OTEL_* variables ask for it (docs/tracing.md). */
  tracing?: TracingSettings;
  /** Worker processes (TOOLPROOF_WORKERS); limits hold for the group (server/group-admission.ts). */
  workers?: number;
  /** The capture ring behind /inspect (docs/inspect.md); off when absent or maxBytes is 0. */
  capture?: CaptureConfig;
  /**
   * TOOLPROOF_RESPONSES_STORE_MB in bytes: the Responses output items kept per process so that an
   * `item_reference` to one resolves (docs/api.md); 0: none kept. Absent: the default.
   */
  responsesStoreBytes?: number;
}

/** TOOLPROOF_CAPTURE_MB and TOOLPROOF_CAPTURE_BODY_KB (docs/inspect.md). */
export interface CaptureConfig {
  /** The ring's budget per process, in bytes; 0: nothing of a request is kept. */
  maxBytes: number;
  /** The most characters one text of a record keeps (a body, a response). */
  textChars: number;
}

export const DEFAULT_CAPTURE_MB = 10;
export const DEFAULT_CAPTURE_BODY_KB = 256;
/** The Responses item store per process (TOOLPROOF_RESPONSES_STORE_MB). */
export const DEFAULT_RESPONSES_STORE_MB = 16;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** TOOLPROOF_WORKERS: unset or empty = 1, `auto` = one per core, else a positive integer. */
export function workerCount(env: NodeJS.ProcessEnv): number {
  const raw = (env.TOOLPROOF_WORKERS ?? '').trim();
  if (raw === '') return 1;
  if (raw === 'auto') return availableParallelism();
  if (/^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 1024) return Number(raw);
  throw new ConfigError(`TOOLPROOF_WORKERS must be "auto" or an integer from 1 to 1024, got "${raw}"`);
}

/**
 * The per-model settings: what the server itself reads, and each policy's own slice, declared
 * beside it (Policy.settingsSchema) and composed here.
 */
const settingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    fallbackTtlSeconds: { type: 'number', minimum: 0 },
    ...policySettingsSchema(),
    contextWindow: { type: 'integer', minimum: 0 },
  },
} as const;

const admissionSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    concurrency: { anyOf: [{ const: 'auto' }, { type: 'integer', minimum: 1 }] },
    reserved: { type: 'integer', minimum: 0 },
    queueSize: { type: 'integer', minimum: 0 },
    queueTimeoutMs: { type: 'integer', minimum: 0 },
    schedulingPriority: { type: 'boolean' },
  },
} as const;

const priorityClass = { enum: [...PRIORITY_CLASSES] } as const;

const urlList = {
  anyOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
  ],
} as const;

export const fileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    server: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string' },
        port: { type: 'integer', minimum: 0, maximum: 65535 },
        logLevel: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
        bodyLimitBytes: { type: 'integer', minimum: 1024 },
        apiKeys: { type: 'array', minItems: 1, items: { type: 'string', minLength: 8 } },
        apiKeysInspect: { enum: ['own', 'all'] },
        protectOps: { type: 'array', items: { enum: [...PROTECTABLE_OPS] } },
        corsOrigins: {
          anyOf: [{ const: 'off' }, { type: 'array', items: { type: 'string', minLength: 1 } }],
        },
        requestTimeoutMs: { type: 'integer', minimum: 1 },
        headersTimeoutMs: { type: 'integer', minimum: 1 },
        shutdownGraceMs: { type: 'integer', minimum: 0 },
        streamKeepAliveMs: { type: 'integer', minimum: 0 },
        rawDumpDir: { type: 'string' },
        captureMb: { type: 'number', minimum: 0, maximum: 65536 },
        captureBodyKb: { type: 'integer', minimum: 1, maximum: 65536 },
        responsesStoreMb: { type: 'number', minimum: 0, maximum: 65536 },
      },
    },
    admission: admissionSchema,
    keys: keysSchema,
    keysFile: { type: 'string', minLength: 1 },
    routes: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['match', 'model'],
        properties: {
          match: {
            anyOf: [
              { type: 'string', minLength: 1 },
              { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
            ],
          },
          model: { type: 'string', minLength: 1 },
        },
      },
    },
    affinity: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        maxInflight: { type: 'integer', minimum: 1 },
      },
    },
    timeouts: {
      type: 'object',
      additionalProperties: false,
      properties: {
        connectMs: { type: 'integer', minimum: 1 },
        firstByteMs: { type: 'integer', minimum: 1 },
        idleMs: { type: 'integer', minimum: 1 },
      },
    },
    upstream: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: { url: urlList, apiKey: { type: 'string' } },
    },
    defaults: settingsSchema,
    models: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['upstream'],
        properties: {
          upstream: urlList,
          apiKey: { type: 'string' },
          upstreamModel: { type: 'string', minLength: 1 },
          admission: admissionSchema,
          priority: priorityClass,
          fallback: { type: 'array', items: { type: 'string', minLength: 1 } },
          longContext: { type: 'string', minLength: 1 },
          // contextWindow (tokens) comes with the settings: also the long-context route's window
          ...settingsSchema.properties,
        },
      },
    },
  },
} as const;

/**
 * The YAML reader, loaded when a file is read (~70 ms of CPU to import, at every start of a
 * process configured from the environment alone, which reads no file).
 */
const parseYaml = (text: string): unknown =>
  (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

/**
 * The config file's and the keys file's validators, compiled on first use: most processes
 * (toolproof configured from the environment alone, a cluster's primary) read neither file, and
 * compiling the two schemas was ~0.2 s of CPU at every start (a third of a start's Ajv time).
 */
let ajv: Ajv | undefined;
let fileValidate: ValidateFunction | undefined;
let keysValidate: ValidateFunction | undefined;
const compiler = () => (ajv ??= new Ajv({ allErrors: true, strict: false }));
/** The config file's validator (its `errors` read after a call). */
export function fileValidator(): ValidateFunction {
  return (fileValidate ??= compiler().compile(fileSchema));
}
function keysValidator(): ValidateFunction {
  return (keysValidate ??= compiler().compile(keysSchema));
}

function describe(errors: ErrorObject[] | null | undefined, file: string): string {
  const lines = (errors ?? []).map((e) => {
    const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.') || '(root)';
    if (e.keyword === 'additionalProperties') {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      return `unknown key "${path === '(root)' ? key : `${path}.${key}`}"`;
    }
    if (e.keyword === 'enum') {
      return `"${path}" must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map(String).join(', ')}`;
    }
    return `"${path}" ${e.message ?? 'is invalid'}`;
  });
  return `invalid config ${file}: ${[...new Set(lines)].join('; ')}`;
}

/** A URL as it may be printed: anything between "//" and "@" (user:password) masked. */
export function redactUrl(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/, '$1***@');
}

function toUrls(value: string | readonly string[], key: string): string[] {
  const list = typeof value === 'string' ? value.split(',') : [...value];
  return list.map((raw) => {
    const url = raw.trim();
    const shown = redactUrl(url);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${key}: "${shown}" is not a URL (expected e.g. http://gpu:8000/v1)`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(`${key}: "${shown}" must be an http:// or https:// URL`);
    }
    // Credentials in the URL would be printed wherever the upstream is named (errors, /ready,
    // metrics labels, logs), and toolproof would not send them: refuse them, name the key setting.
    if (parsed.username || parsed.password) {
      throw new ConfigError(
        `${key}: "${shown}" must not contain credentials (user:password@); give the upstream's key as ${key.startsWith('models.') ? `${key.replace(/\.upstream$/, '')}.apiKey` : 'TOOLPROOF_UPSTREAM_API_KEY'} instead (sent as a Bearer token)`,
      );
    }
    if (parsed.search || parsed.hash)
      throw new ConfigError(`${key}: "${shown}" must not have a query or fragment`);
    return url.replace(/\/+$/, '');
  });
}

function mergeSettings(
  base: ModelSettings,
  over: Record<string, unknown> | undefined,
  key: string,
): ModelSettings {
  if (!over) return base;
  if (Array.isArray(over.parsers)) {
    for (const name of over.parsers as string[]) {
      if (!PARSER_NAMES.includes(name)) {
        throw new ConfigError(`${key}.parsers: unknown parser "${name}"; known: ${PARSER_NAMES.join(', ')}`);
      }
    }
  }
  // A section (an object default, e.g. historyRepair) is merged key by key; a value replaces.
  const merged: Record<string, unknown> = { ...base };
  for (const key of Object.keys(DEFAULT_MODEL_SETTINGS)) {
    const value = over[key];
    if (value === undefined) continue;
    const current = (base as unknown as Record<string, unknown>)[key];
    merged[key] =
      typeof current === 'object' && current !== null && !Array.isArray(current)
        ? Object.freeze({ ...current, ...(value as object) })
        : value;
  }
  return Object.freeze(merged) as unknown as ModelSettings;
}

function envInt(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be a non-negative integer, got "${raw}"`);
  return Number(raw.trim());
}

/** A non-negative number (fractions allowed: TOOLPROOF_CAPTURE_MB=0.5). */
function envNumber(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+(\.\d+)?$/.test(raw.trim()))
    throw new ConfigError(`${key} must be a non-negative number, got "${raw}"`);
  return Number(raw.trim());
}

/** A timeout: 0 would silently mean "no limit" to node and undici, so it is refused. */
function envTimeout(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const n = envInt(env, key);
  if (n === 0)
    throw new ConfigError(`${key} must be at least 1 (milliseconds); 0 would mean no timeout at all`);
  return n;
}

/** A comma-separated list; set but empty (" , ") is an error, never "nothing configured". */
function envList(env: NodeJS.ProcessEnv, key: string, what: string): string[] | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  const list = raw
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (list.length === 0)
    throw new ConfigError(`${key} is set but holds no ${what} ("${raw}"); unset it or list at least one`);
  return list;
}

type FileConfig = {
  server?: {
    host?: string;
    port?: number;
    logLevel?: string;
    bodyLimitBytes?: number;
    apiKeys?: string[];
    apiKeysInspect?: 'own' | 'all';
    protectOps?: ProtectableOp[];
    corsOrigins?: 'off' | string[];
    requestTimeoutMs?: number;
    headersTimeoutMs?: number;
    shutdownGraceMs?: number;
    streamKeepAliveMs?: number;
    rawDumpDir?: string;
    captureMb?: number;
    captureBodyKb?: number;
    responsesStoreMb?: number;
  };
  timeouts?: Partial<Timeouts>;
  affinity?: Partial<AffinityConfig>;
  admission?: AdmissionFile;
  keys?: ApiKeyEntry[];
  keysFile?: string;
  routes?: Array<{ match: string | string[]; model: string }>;
  upstream?: { url: string | string[]; apiKey?: string };
  defaults?: Record<string, unknown>;
  models?: Record<
    string,
    Record<string, unknown> & {
      upstream: string | string[];
      apiKey?: string;
      upstreamModel?: string;
      admission?: AdmissionFile;
      priority?: PriorityClass;
      fallback?: string[];
      longContext?: string;
      contextWindow?: number;
    }
  >;
};

/** The built-in simulator as the default upstream, with the configuration's admission for it. */
export function simulatorUpstream(url: string, admission: UpstreamAdmission | undefined): UpstreamTarget {
  return Object.freeze({ urls: Object.freeze([url]), ...(admission ? { admission } : {}) });
}

type AdmissionFile = Partial<Omit<UpstreamAdmission, 'concurrency'>> & { concurrency?: number | 'auto' };

/**
 * One upstream's admission: the YAML's top-level section, then the model's own; the concurrency
 * limit is the process group's (with N workers the cluster primary holds the one gate).
 */
function toAdmission(
  base: AdmissionFile | undefined,
  over: AdmissionFile | undefined,
): UpstreamAdmission | undefined {
  if (base === undefined && over === undefined) return undefined;
  const merged = { ...base, ...over };
  const concurrency = merged.concurrency;
  return Object.freeze({
    ...DEFAULT_ADMISSION,
    ...(concurrency === undefined ? {} : { concurrency }),
    reserved: merged.reserved ?? DEFAULT_ADMISSION.reserved,
    queueSize: merged.queueSize ?? DEFAULT_ADMISSION.queueSize,
    queueTimeoutMs: merged.queueTimeoutMs ?? DEFAULT_ADMISSION.queueTimeoutMs,
    schedulingPriority: merged.schedulingPriority ?? false,
  });
}

export function readConfigFile(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`TOOLPROOF_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`TOOLPROOF_CONFIG: ${path} is not valid YAML: ${(err as Error).message}`);
  }
  const validateFile = fileValidator();
  if (!validateFile(data)) throw new ConfigError(describe(validateFile.errors, path));
  return data as FileConfig;
}

/**
 * The separate keys file: the `keys:` list on its own, or a mapping holding `keys:` (the same
 * schema as the YAML's section), so keys can change (a secret store's mount) apart from the rest.
 */
export function readKeysFile(path: string): ApiKeyEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`TOOLPROOF_KEYS_FILE: cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text) ?? [];
  } catch (err) {
    throw new ConfigError(`TOOLPROOF_KEYS_FILE: ${path} is not valid YAML: ${(err as Error).message}`);
  }
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
    const extra = Object.keys(data).filter((k) => k !== 'keys');
    if (extra.length > 0)
      throw new ConfigError(`TOOLPROOF_KEYS_FILE: ${path}: unknown key "${extra[0]}" (expected keys:)`);
    data = (data as { keys?: unknown }).keys ?? [];
  }
  const validateKeys = keysValidator();
  if (!validateKeys(data)) throw new ConfigError(describe(validateKeys.errors, `${path} (keys)`));
  return data as ApiKeyEntry[];
}

/** The keys file's path: the environment's, else the YAML's (relative to the YAML's folder). */
function keysFilePath(env: NodeJS.ProcessEnv, file: FileConfig): string | undefined {
  if (env.TOOLPROOF_KEYS_FILE) return env.TOOLPROOF_KEYS_FILE;
  if (!file.keysFile) return undefined;
  return env.TOOLPROOF_CONFIG ? resolve(dirname(env.TOOLPROOF_CONFIG), file.keysFile) : file.keysFile;
}

/** Builds the frozen Config from environment variables and the optional YAML file they name. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, fileOverride?: FileConfig): Config {
  const file: FileConfig = fileOverride ?? (env.TOOLPROOF_CONFIG ? readConfigFile(env.TOOLPROOF_CONFIG) : {});
  if (fileOverride && !fileValidator()(fileOverride))
    throw new ConfigError(describe(fileValidator().errors, '(inline)'));

  const defaults = mergeSettings(DEFAULT_MODEL_SETTINGS, file.defaults, 'defaults');
  const envKeys = envList(env, 'TOOLPROOF_API_KEYS', 'key') ?? [];
  const upstreamApiKey = env.TOOLPROOF_UPSTREAM_API_KEY || file.upstream?.apiKey;
  const defaultUrls = env.TOOLPROOF_UPSTREAM_URL
    ? toUrls(env.TOOLPROOF_UPSTREAM_URL, 'TOOLPROOF_UPSTREAM_URL')
    : file.upstream
      ? toUrls(file.upstream.url, 'upstream.url')
      : undefined;

  const workers = workerCount(env);
  const envConcurrency = env.TOOLPROOF_ADMISSION_CONCURRENCY?.trim();
  if (envConcurrency && envConcurrency !== 'auto' && !/^[1-9]\d*$/.test(envConcurrency))
    throw new ConfigError(
      `TOOLPROOF_ADMISSION_CONCURRENCY must be "auto" or a positive integer, got "${envConcurrency}"`,
    );
  const baseAdmission: AdmissionFile | undefined = envConcurrency
    ? { ...file.admission, concurrency: envConcurrency === 'auto' ? 'auto' : Number(envConcurrency) }
    : file.admission;
  const defaultAdmission = toAdmission(baseAdmission, undefined);

  const models: Record<string, ModelRoute> = Object.create(null);
  for (const [name, section] of Object.entries(file.models ?? {})) {
    const {
      upstream,
      apiKey,
      upstreamModel,
      admission,
      priority,
      fallback,
      longContext,
      contextWindow,
      ...settings
    } = section;
    const urls = toUrls(upstream, `models.${name}.upstream`);
    // A key belongs to the upstream it was configured for: the default upstream's key goes only
    // to a model served by that same upstream, never to another host.
    const sameAsDefault = defaultUrls !== undefined && urls.join(',') === defaultUrls.join(',');
    const key = apiKey ?? (sameAsDefault ? upstreamApiKey : undefined);
    const modelAdmission = toAdmission(baseAdmission, admission);
    const route: ModelRoute = {
      name,
      upstream: Object.freeze({
        urls: Object.freeze(urls),
        ...(key ? { apiKey: key } : {}),
        ...(modelAdmission ? { admission: modelAdmission } : {}),
      }),
      // The window is also a setting (the backend's, read at start-up, fills an unset one).
      settings: mergeSettings(
        defaults,
        contextWindow ? { ...settings, contextWindow } : settings,
        `models.${name}`,
      ),
      ...(upstreamModel ? { upstreamModel } : {}),
      ...(priority ? { priority } : {}),
      ...(fallback && fallback.length > 0 ? { fallback: Object.freeze([...fallback]) } : {}),
      ...(longContext ? { longContext } : {}),
      ...(contextWindow ? { contextWindow } : {}),
    };
    models[name] = Object.freeze(route);
  }
  // Every name a route or a fallback points to is a mapped model: a typo fails at start-up
  // (and a reload with one is kept out).
  const mapped = (name: string, where: string) => {
    if (!Object.hasOwn(models, name))
      throw new ConfigError(`${where}: "${name}" is not a model of the models section`);
  };
  for (const route of Object.values(models)) {
    for (const f of route.fallback ?? []) mapped(f, `models.${route.name}.fallback`);
    if (route.longContext) mapped(route.longContext, `models.${route.name}.longContext`);
  }
  const routes: RouteRule[] = (file.routes ?? []).map((r, i) => {
    mapped(r.model, `routes.${i}.model`);
    return Object.freeze({
      match: Object.freeze(typeof r.match === 'string' ? [r.match] : [...r.match]),
      model: r.model,
    });
  });

  const port = envInt(env, 'TOOLPROOF_PORT') ?? file.server?.port ?? DEFAULT_PORT;
  if (port > 65535) throw new ConfigError(`TOOLPROOF_PORT must be at most 65535, got ${port}`);
  const logLevel = env.TOOLPROOF_LOG_LEVEL ?? file.server?.logLevel ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(
      `TOOLPROOF_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`,
    );
  }
  const simulator = !defaultUrls && Object.keys(models).length === 0;
  const protectOps = envList(env, 'TOOLPROOF_PROTECT_OPS', 'endpoint') ?? file.server?.protectOps ?? [];
  for (const op of protectOps) {
    if (!(PROTECTABLE_OPS as readonly string[]).includes(op))
      throw new ConfigError(
        `TOOLPROOF_PROTECT_OPS: unknown endpoint "${op}"; known: ${PROTECTABLE_OPS.join(', ')}`,
      );
  }
  const corsRaw = env.TOOLPROOF_CORS_ORIGINS?.trim();
  const corsOrigins =
    corsRaw === 'off' || file.server?.corsOrigins === 'off'
      ? []
      : (envList(env, 'TOOLPROOF_CORS_ORIGINS', 'origin') ??
        (Array.isArray(file.server?.corsOrigins) ? file.server.corsOrigins : ['*']));
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin))
      throw new ConfigError(
        `TOOLPROOF_CORS_ORIGINS: "${origin}" is not an origin (expected * , off, or e.g. https://app.example.com)`,
      );
  }
  const requestMs =
    envTimeout(env, 'TOOLPROOF_REQUEST_TIMEOUT_MS') ??
    file.server?.requestTimeoutMs ??
    DEFAULT_REQUEST_TIMEOUT_MS;
  const headersMs = Math.min(
    envTimeout(env, 'TOOLPROOF_HEADERS_TIMEOUT_MS') ??
      file.server?.headersTimeoutMs ??
      DEFAULT_HEADERS_TIMEOUT_MS,
    requestMs,
  );
  const rawDumpDir = env.TOOLPROOF_RAW_DUMP_DIR || file.server?.rawDumpDir;
  const affinityRaw = env.TOOLPROOF_AFFINITY?.trim().toLowerCase();
  if (affinityRaw && affinityRaw !== 'on' && affinityRaw !== 'off')
    throw new ConfigError(`TOOLPROOF_AFFINITY must be on or off, got "${env.TOOLPROOF_AFFINITY}"`);
  const maxInflight =
    envInt(env, 'TOOLPROOF_AFFINITY_MAX_INFLIGHT') ??
    file.affinity?.maxInflight ??
    DEFAULT_AFFINITY.maxInflight;
  if (maxInflight < 1) throw new ConfigError('TOOLPROOF_AFFINITY_MAX_INFLIGHT must be at least 1');

  let tracing: TracingSettings | undefined;
  try {
    tracing = tracingSettings(env);
  } catch (err) {
    if (err instanceof TracingSettingsError) throw new ConfigError(err.message);
    throw err;
  }
  const flatKeys = envKeys.length > 0 ? envKeys : (file.server?.apiKeys ?? []);
  const keys: ApiKeyEntry[] = [];
  const names = new Set<string>();
  const secrets = new Set<string>();
  const keysFile = keysFilePath(env, file);
  for (const entry of [...(file.keys ?? []), ...(keysFile ? readKeysFile(keysFile) : [])]) {
    if (names.has(entry.name)) throw new ConfigError(`keys: the name "${entry.name}" is given twice`);
    // The flat keys' name: the capture, the inspector's owners, admission and the metrics know a
    // key by its name, and a named key called so read every flat key's requests as its own.
    if (entry.name === UNNAMED_KEY)
      throw new ConfigError(
        `keys: the name "${UNNAMED_KEY}" is the one the flat keys (TOOLPROOF_API_KEYS, server.apiKeys) carry; give this key another name`,
      );
    if (secrets.has(entry.key)) throw new ConfigError(`keys.${entry.name}: the same key is given twice`);
    names.add(entry.name);
    secrets.add(entry.key);
    keys.push(frozenKey(entry));
  }
  // What the flat keys see in the inspector (docs/inspect.md): beside named keys, only the flat
  // keys' own requests. A flat key is often the one handed round (a shared CI or team key), and
  // it read every named key's prompts and answers: other teams' tenants. Alone, every request is
  // theirs anyway (`all`, as before).
  const flatInspectRaw = env.TOOLPROOF_API_KEYS_INSPECT?.trim().toLowerCase();
  if (flatInspectRaw && flatInspectRaw !== 'own' && flatInspectRaw !== 'all')
    throw new ConfigError(
      `TOOLPROOF_API_KEYS_INSPECT must be own or all, got "${env.TOOLPROOF_API_KEYS_INSPECT}"`,
    );
  const flatInspect: 'own' | 'all' =
    (flatInspectRaw as 'own' | 'all' | undefined) ||
    file.server?.apiKeysInspect ||
    (keys.length > 0 ? 'own' : 'all');
  for (const key of flatKeys)
    if (!secrets.has(key))
      keys.push(Object.freeze({ name: UNNAMED_KEY, key, inspect: flatInspect, token: flatKeyToken(key) }));
  const captureMb = envNumber(env, 'TOOLPROOF_CAPTURE_MB') ?? file.server?.captureMb ?? DEFAULT_CAPTURE_MB;
  if (captureMb < 0 || captureMb > 65536)
    throw new ConfigError(`TOOLPROOF_CAPTURE_MB must be from 0 to 65536, got ${captureMb}`);
  const captureBodyKb =
    envInt(env, 'TOOLPROOF_CAPTURE_BODY_KB') ?? file.server?.captureBodyKb ?? DEFAULT_CAPTURE_BODY_KB;
  if (captureBodyKb < 1 || captureBodyKb > 65536)
    throw new ConfigError(`TOOLPROOF_CAPTURE_BODY_KB must be from 1 to 65536, got ${captureBodyKb}`);
  const storeMb =
    envNumber(env, 'TOOLPROOF_RESPONSES_STORE_MB') ??
    file.server?.responsesStoreMb ??
    DEFAULT_RESPONSES_STORE_MB;
  if (storeMb > 65536)
    throw new ConfigError(`TOOLPROOF_RESPONSES_STORE_MB must be from 0 to 65536, got ${storeMb}`);

  const config: Config = {
    host: env.TOOLPROOF_HOST || file.server?.host || '127.0.0.1',
    port,
    logLevel,
    bodyLimitBytes:
      envInt(env, 'TOOLPROOF_BODY_LIMIT_BYTES') ?? file.server?.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    apiKeys: Object.freeze(flatKeys),
    keys: Object.freeze(keys),
    ...(keysFile ? { keysFile } : {}),
    protectOps: Object.freeze([...new Set(protectOps)] as ProtectableOp[]),
    corsOrigins: Object.freeze(corsOrigins),
    clientTimeouts: Object.freeze({ requestMs, headersMs }),
    timeouts: Object.freeze({
      connectMs: envTimeout(env, 'TOOLPROOF_CONNECT_TIMEOUT_MS') ?? file.timeouts?.connectMs ?? 5_000,
      firstByteMs:
        envTimeout(env, 'TOOLPROOF_FIRST_BYTE_TIMEOUT_MS') ?? file.timeouts?.firstByteMs ?? 300_000,
      idleMs: envTimeout(env, 'TOOLPROOF_IDLE_TIMEOUT_MS') ?? file.timeouts?.idleMs ?? 120_000,
    }),
    shutdownGraceMs: envInt(env, 'TOOLPROOF_SHUTDOWN_GRACE_MS') ?? file.server?.shutdownGraceMs ?? 30_000,
    streamKeepAliveMs:
      envInt(env, 'TOOLPROOF_STREAM_KEEPALIVE_MS') ??
      file.server?.streamKeepAliveMs ??
      DEFAULT_STREAM_KEEPALIVE_MS,
    defaults,
    models: Object.freeze(models),
    routes: Object.freeze(routes),
    simulator,
    ...(simulator && defaultAdmission ? { simulatorAdmission: defaultAdmission } : {}),
    ...(defaultUrls
      ? {
          defaultUpstream: Object.freeze({
            urls: Object.freeze(defaultUrls),
            ...(upstreamApiKey ? { apiKey: upstreamApiKey } : {}),
            ...(defaultAdmission ? { admission: defaultAdmission } : {}),
          }),
        }
      : {}),
    ...(rawDumpDir ? { rawDumpDir } : {}),
    ...(tracing ? { tracing: Object.freeze(tracing) } : {}),
    workers,
    capture: Object.freeze({
      maxBytes: Math.floor(captureMb * 1024 * 1024),
      textChars: captureBodyKb * 1024,
    }),
    responsesStoreBytes: Math.floor(storeMb * 1024 * 1024),
    affinity: Object.freeze({
      enabled: affinityRaw ? affinityRaw === 'on' : (file.affinity?.enabled ?? DEFAULT_AFFINITY.enabled),
      maxInflight,
    }),
  };
  return Object.freeze(config);
}
