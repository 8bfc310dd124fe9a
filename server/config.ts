/**
 * Configuration: environment variables plus an optional YAML file (TOOLPROOF_CONFIG), validated
 * once at start-up with one precise message per bad key, then frozen. Nothing falls back
 * silently: an unknown key or a wrong type stops the process with the key's path in the message.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { PARSER_NAMES } from '../parsers/registry.js';
import { DEFAULT_MODEL_SETTINGS, type ModelSettings } from '../protocol/settings.js';

export const DEFAULT_PORT = 8787; // clashes with neither vLLM's 8000 nor llama-server's 8080
export const DEFAULT_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

export interface Timeouts {
  /** TCP/TLS connect to an upstream. */
  connectMs: number;
  /** From sending the request to the upstream's response headers (waiting for the first token). */
  firstByteMs: number;
  /** Longest silence between two body chunks of an upstream response. */
  idleMs: number;
}

export interface UpstreamTarget {
  /** OpenAI base URLs including the path prefix, e.g. http://gpu:8000/v1; replicas of one deployment. */
  urls: readonly string[];
  apiKey?: string;
}

export interface ModelRoute {
  /** The model name clients send. */
  name: string;
  upstream: UpstreamTarget;
  /** Rename the model on the way upstream (e.g. clients say "qwen", vLLM serves "Qwen/Qwen3-8B"). */
  upstreamModel?: string;
  settings: ModelSettings;
}

export interface Config {
  host: string;
  port: number;
  logLevel: string;
  bodyLimitBytes: number;
  apiKeys: readonly string[];
  timeouts: Timeouts;
  shutdownGraceMs: number;
  /** Used for models the YAML does not map (TOOLPROOF_UPSTREAM_URL). */
  defaultUpstream?: UpstreamTarget;
  /** Settings for models the YAML does not map. */
  defaults: ModelSettings;
  models: Readonly<Record<string, ModelRoute>>;
  /** true when no upstream is configured: main.ts starts the built-in simulator. */
  simulator: boolean;
  /** Save each attempt's raw upstream response here (diagnosis; off by default). */
  rawDumpDir?: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const settingsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    parsers: { anyOf: [{ const: 'all' }, { type: 'array', items: { type: 'string', minLength: 1 } }] },
    recovery: { enum: ['auto', 'always', 'off'] },
    startsInReasoning: { type: 'boolean' },
    forceToolUse: { type: 'boolean' },
    finalAnswerTool: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    fallbackTtlSeconds: { type: 'number', minimum: 0 },
    historyRepair: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        missingResultContent: { type: 'string' },
        orphanResults: { enum: ['as-user', 'as-assistant', 'drop'] },
        nineCharIds: { type: 'boolean' },
        bridgeToolToUser: { type: 'boolean' },
        toolCallContent: { enum: ['keep', 'null', 'empty'] },
        mergeSameRole: { type: 'boolean' },
      },
    },
    maxRetries: { type: 'integer', minimum: 0, maximum: 3 },
    validateArguments: { type: 'boolean' },
    maxHeldBytes: { type: 'integer', minimum: 1024 },
  },
} as const;

const urlList = {
  anyOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
  ],
} as const;

const fileSchema = {
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
        apiKeys: { type: 'array', items: { type: 'string', minLength: 8 } },
        shutdownGraceMs: { type: 'integer', minimum: 0 },
        rawDumpDir: { type: 'string' },
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
          ...settingsSchema.properties,
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: true, strict: false });
const validateFile = ajv.compile(fileSchema);

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

function toUrls(value: string | readonly string[], key: string): string[] {
  const list = typeof value === 'string' ? value.split(',') : [...value];
  return list.map((raw) => {
    const url = raw.trim();
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${key}: "${url}" is not a URL (expected e.g. http://gpu:8000/v1)`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(`${key}: "${url}" must be an http:// or https:// URL`);
    }
    if (parsed.search || parsed.hash)
      throw new ConfigError(`${key}: "${url}" must not have a query or fragment`);
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
  const { historyRepair, ...rest } = over as Partial<ModelSettings> & Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(DEFAULT_MODEL_SETTINGS)) {
    if (key !== 'historyRepair' && rest[key] !== undefined) picked[key] = rest[key];
  }
  return Object.freeze({
    ...base,
    ...picked,
    historyRepair: Object.freeze({ ...base.historyRepair, ...(historyRepair ?? {}) }),
  }) as ModelSettings;
}

function envInt(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be a non-negative integer, got "${raw}"`);
  return Number(raw.trim());
}

type FileConfig = {
  server?: {
    host?: string;
    port?: number;
    logLevel?: string;
    bodyLimitBytes?: number;
    apiKeys?: string[];
    shutdownGraceMs?: number;
    rawDumpDir?: string;
  };
  timeouts?: Partial<Timeouts>;
  upstream?: { url: string | string[]; apiKey?: string };
  defaults?: Record<string, unknown>;
  models?: Record<
    string,
    Record<string, unknown> & { upstream: string | string[]; apiKey?: string; upstreamModel?: string }
  >;
};

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
  if (!validateFile(data)) throw new ConfigError(describe(validateFile.errors, path));
  return data as FileConfig;
}

/** Builds the frozen Config from environment variables and the optional YAML file they name. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, fileOverride?: FileConfig): Config {
  const file: FileConfig = fileOverride ?? (env.TOOLPROOF_CONFIG ? readConfigFile(env.TOOLPROOF_CONFIG) : {});
  if (fileOverride && !validateFile(fileOverride))
    throw new ConfigError(describe(validateFile.errors, '(inline)'));

  const defaults = mergeSettings(DEFAULT_MODEL_SETTINGS, file.defaults, 'defaults');
  const envKeys = (env.TOOLPROOF_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  const upstreamApiKey = env.TOOLPROOF_UPSTREAM_API_KEY || file.upstream?.apiKey;
  const defaultUrls = env.TOOLPROOF_UPSTREAM_URL
    ? toUrls(env.TOOLPROOF_UPSTREAM_URL, 'TOOLPROOF_UPSTREAM_URL')
    : file.upstream
      ? toUrls(file.upstream.url, 'upstream.url')
      : undefined;

  const models: Record<string, ModelRoute> = {};
  for (const [name, section] of Object.entries(file.models ?? {})) {
    const { upstream, apiKey, upstreamModel, ...settings } = section;
    const route: ModelRoute = {
      name,
      upstream: Object.freeze({
        urls: Object.freeze(toUrls(upstream, `models.${name}.upstream`)),
        ...((apiKey ?? upstreamApiKey) ? { apiKey: apiKey ?? upstreamApiKey } : {}),
      }),
      settings: mergeSettings(defaults, settings, `models.${name}`),
      ...(upstreamModel ? { upstreamModel } : {}),
    };
    models[name] = Object.freeze(route);
  }

  const port = envInt(env, 'TOOLPROOF_PORT') ?? file.server?.port ?? DEFAULT_PORT;
  if (port > 65535) throw new ConfigError(`TOOLPROOF_PORT must be at most 65535, got ${port}`);
  const logLevel = env.TOOLPROOF_LOG_LEVEL ?? file.server?.logLevel ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(
      `TOOLPROOF_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`,
    );
  }
  const simulator = !defaultUrls && Object.keys(models).length === 0;
  const rawDumpDir = env.TOOLPROOF_RAW_DUMP_DIR || file.server?.rawDumpDir;

  const config: Config = {
    host: env.TOOLPROOF_HOST || file.server?.host || '127.0.0.1',
    port,
    logLevel,
    bodyLimitBytes:
      envInt(env, 'TOOLPROOF_BODY_LIMIT_BYTES') ?? file.server?.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    apiKeys: Object.freeze(envKeys.length > 0 ? envKeys : (file.server?.apiKeys ?? [])),
    timeouts: Object.freeze({
      connectMs: envInt(env, 'TOOLPROOF_CONNECT_TIMEOUT_MS') ?? file.timeouts?.connectMs ?? 5_000,
      firstByteMs: envInt(env, 'TOOLPROOF_FIRST_BYTE_TIMEOUT_MS') ?? file.timeouts?.firstByteMs ?? 300_000,
      idleMs: envInt(env, 'TOOLPROOF_IDLE_TIMEOUT_MS') ?? file.timeouts?.idleMs ?? 120_000,
    }),
    shutdownGraceMs: envInt(env, 'TOOLPROOF_SHUTDOWN_GRACE_MS') ?? file.server?.shutdownGraceMs ?? 30_000,
    defaults,
    models: Object.freeze(models),
    simulator,
    ...(defaultUrls
      ? {
          defaultUpstream: Object.freeze({
            urls: Object.freeze(defaultUrls),
            ...(upstreamApiKey ? { apiKey: upstreamApiKey } : {}),
          }),
        }
      : {}),
    ...(rawDumpDir ? { rawDumpDir } : {}),
  };
  return Object.freeze(config);
}

/** A config pointing every model at one upstream (tests, simulator mode). */
export function configFor(upstreamUrl: string, overrides: Partial<Config> = {}): Config {
  const base = loadConfig({ TOOLPROOF_UPSTREAM_URL: upstreamUrl });
  return Object.freeze({ ...base, ...overrides });
}
