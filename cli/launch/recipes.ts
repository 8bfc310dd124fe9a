/**
 * How each agent CLI is pointed at toolproof: one declarative entry per agent. An entry names the
 * binary and its npm package, the API it speaks, and builds, from the target (toolproof's origin,
 * the model, its window and output limit, the key), the environment, the temporary files and the
 * leading arguments it runs with, plus the switches that turn off its non-essential traffic.
 * Nothing here touches the disk or the network: `plan.ts` turns an entry into a launch.
 *
 * Adding an agent: one entry in RECIPES (an SDK: in SDK_RECIPES), one case in tests/agents/ (and
 * its pin in scripts/install-agents.mjs). The settings each one uses are documented in docs/agents-setup.md;
 * the facts come from each agent's own docs and, where they are silent, its shipped source.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { claudeShadowing } from './claude-shadow.js';
import type { StartupFile } from './startup-files.js';

export type AgentApi = 'messages' | 'responses' | 'chat';

export interface Target {
  /** toolproof's origin, without /v1. */
  base: string;
  model: string;
  /** The model's context window in tokens, when toolproof reports one. */
  window?: number;
  /** The output limit the agent asks for. */
  maxOutput: number;
  /** Whether the model reads images, when toolproof says (its model list's `input_modalities`). */
  vision?: boolean;
  key: string;
  /** The API, for an agent that speaks several (pi). */
  api: AgentApi;
  /** The run's temporary folder: `files` are written there. */
  dir: string;
}

export interface AgentRecipe {
  id: string;
  name: string;
  /** The executable's name (looked up in PATH, then in the agents cache); absent for an SDK. */
  bin?: string;
  /** The npm package that ships it. */
  pkg: string;
  /**
   * A library the user's own program imports, not a CLI: the command after `--` is run as given
   * (`toolproof launch openai-agents -- node app.mjs`) with the environment the SDK reads, and
   * `pkg` must be installed where that program finds it.
   */
  sdk?: boolean;
  /** The APIs it can speak; the first is the default. */
  apis: readonly AgentApi[];
  /**
   * Its own first request (system prompt and tool definitions) in tokens, as recorded: what the
   * window holds before any file (reserve.ts). Absent where none is recorded.
   */
  promptTokens?: number;
  /** Environment set for the agent (over the user's own). */
  env?(t: Target): Record<string, string>;
  /** The user's variables that would send it elsewhere, removed. */
  unset?: readonly string[];
  /** Temporary files, by name inside `t.dir`, removed when the agent exits. */
  files?(t: Target): Record<string, string>;
  /** Arguments placed before the user's own. */
  args?(t: Target): string[];
  /** Non-essential traffic (telemetry, update checks) off: environment. */
  quiet?: Record<string, string>;
  /** Non-essential traffic off: arguments. */
  quietArgs?: readonly string[];
  /** `--write`: the user's config file and the settings merged into it. */
  write?: WriteSpec;
  /**
   * A run without a terminal (`claude -p`, `codex exec`, `qwen -p`) that lacks any switch of the
   * user's own about permissions: nobody is there to answer the agent's permission prompt, so its
   * write is refused, and a small model often says "done" all the same (which looks like
   * toolproof's fault). The user's arguments with the narrowest switch that lets the agent edit
   * files in its working folder (never the shell outside its sandbox, never "skip permissions"),
   * and that switch as words for the line the launcher prints. Any permission switch of the
   * user's own wins: then undefined.
   */
  headless?(args: readonly string[]): { args: string[]; added: string } | undefined;
  /**
   * What in the user's own config would override the launch and how to avoid it, as lines the
   * launcher says before the run (`cwd`: the working directory the run gets).
   */
  warnings?(env: NodeJS.ProcessEnv, cwd: string, t: Target): string[];
  /** Files it writes into the working folder at every start (startup-files.ts): removed after if left so. */
  startupFiles?: readonly StartupFile[];
}

/** Grok CLI 0.0.34's project settings as it writes them when there are none: its default model alone. */
function isGrokDefaultProject(text: string): boolean {
  try {
    const v = JSON.parse(text) as unknown;
    return (
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      Object.keys(v).length === 1 &&
      (v as { model?: unknown }).model === 'grok-code-fast-1'
    );
  } catch {
    return false;
  }
}

/** Whether `args` holds one of `flags`, alone or as `--flag=value`. */
function hasFlag(args: readonly string[], flags: readonly string[]): boolean {
  return args.some((a) => flags.some((f) => a === f || a.startsWith(`${f}=`)));
}

export interface WriteSpec {
  /** The file, given the user's environment (HOME, XDG_CONFIG_HOME, CODEX_HOME). */
  path(env: NodeJS.ProcessEnv): string;
  /** The file's new text, given its current text (undefined when it does not exist). */
  merge(current: string | undefined, t: Target): string;
  /** What the user runs afterwards. */
  run: string;
}

function home(env: NodeJS.ProcessEnv): string {
  return env.HOME || homedir();
}

function configHome(env: NodeJS.ProcessEnv): string {
  return env.XDG_CONFIG_HOME || join(home(env), '.config');
}

/** Agents that compact on their own are told to do so at this share of the window. */
export const COMPACT_AT = 0.85;

/** Claude Code 2.1 reads CLAUDE_CODE_AUTO_COMPACT_WINDOW with a floor of 100k tokens (its own minimum). */
const CLAUDE_MIN_COMPACT_WINDOW = 100_000;

/**
 * Claude Code's auto-compaction: the window (at least its 100k floor), and below the floor the
 * trigger as a percentage of that floor (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE), so a 32k model
 * compacts at 85% of 32k, not at 100k. CLAUDE_CODE_MAX_CONTEXT_TOKENS is its documented window of
 * an unknown model id.
 */
export function claudeWindow(window: number | undefined): Record<string, string> {
  if (!window) return {};
  const env: Record<string, string> = {
    CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(window),
    CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(Math.max(window, CLAUDE_MIN_COMPACT_WINDOW)),
  };
  const pct = Math.floor((COMPACT_AT * 100 * window) / Math.max(window, CLAUDE_MIN_COMPACT_WINDOW));
  if (window < CLAUDE_MIN_COMPACT_WINDOW) env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = String(Math.max(1, pct));
  return env;
}

function claudeEnv(t: Target): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: t.base,
    ANTHROPIC_AUTH_TOKEN: t.key,
    ANTHROPIC_MODEL: t.model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: t.model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: t.model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: t.model,
    ANTHROPIC_SMALL_FAST_MODEL: t.model,
    CLAUDE_CODE_SUBAGENT_MODEL: t.model,
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(t.maxOutput),
    ...claudeWindow(t.window),
  };
}

/** A user's own Anthropic key or cloud switch would win over the gateway's token. */
const CLAUDE_UNSET = [
  'ANTHROPIC_API_KEY',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'CLAUDE_CODE_USE_FOUNDRY',
] as const;

const CLAUDE_QUIET = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_ERROR_REPORTING: '1',
};

/**
 * Claude Code applies the `env` of its settings files (~/.claude/settings.json, the project's
 * .claude/settings*.json) over its own environment: a user's ANTHROPIC_BASE_URL or ANTHROPIC_MODEL
 * there (one `toolproof launch claude --write` put there for another port or model, a gateway of
 * their own) sent the launched run elsewhere. Settings given with `--settings` rank above those
 * files, so the run's variables go there too, in a temporary file (not on the command line, where
 * `ps` would show the key). An empty value is unset for Claude Code: a user's own Anthropic key or
 * cloud switch in those files is emptied, as CLAUDE_UNSET removes them from the environment.
 */
export function claudeSettings(t: Target): string {
  const cleared = Object.fromEntries(CLAUDE_UNSET.map((name) => [name, '']));
  return JSON.stringify({ env: { ...cleared, ...claudeEnv(t), ...CLAUDE_QUIET } });
}

/**
 * A TOML basic string: JSON's escapes are TOML's, but JSON leaves DEL (U+007F) raw, which TOML
 * refuses, and writes a lone surrogate as `\udXXX`, which no TOML string can hold. A model name
 * comes from toolproof's model list (the upstream's): such a name made Codex refuse the whole
 * configuration, so DEL is escaped and a lone surrogate refused here, by name.
 */
export function tomlString(value: string): string {
  if (/\p{Surrogate}/u.test(value))
    throw new Error(`${JSON.stringify(value)} cannot be written in TOML (a lone surrogate)`);
  return JSON.stringify(value).replace(/\x7f/g, '\\u007F');
}

/** Codex's settings as `-c key=value` overrides: the user's CODEX_HOME (login, sessions, AGENTS.md) stays as it is. */
function codexSettings(t: Target): Array<[string, string]> {
  const settings: Array<[string, string]> = [
    ['model', tomlString(t.model)],
    ['model_provider', '"toolproof"'],
    ['model_providers.toolproof.name', '"toolproof"'],
    ['model_providers.toolproof.base_url', tomlString(`${t.base}/v1`)],
    ['model_providers.toolproof.wire_api', '"responses"'],
    ['model_providers.toolproof.env_key', '"TOOLPROOF_API_KEY"'],
  ];
  if (t.window) {
    settings.push(['model_context_window', String(t.window)]);
    settings.push(['model_auto_compact_token_limit', String(Math.floor(t.window * COMPACT_AT))]);
  }
  return settings;
}

const CODEX_QUIET: Array<[string, string]> = [
  ['check_for_update_on_startup', 'false'],
  ['analytics.enabled', 'false'],
];

/** Replaces the `[table]` blocks named in `drop` (header to the next header) and appends `add`. */
export function replaceTomlTables(current: string, drop: readonly string[], add: string): string {
  const out: string[] = [];
  let skipping = false;
  for (const line of current.split('\n')) {
    const header = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) skipping = drop.some((d) => header[1] === d || header[1]!.startsWith(`${d}.`));
    if (!skipping) out.push(line);
  }
  const kept = out.join('\n').replace(/\n*$/, '');
  return `${kept ? `${kept}\n\n` : ''}${add}`;
}

function codexProfile(t: Target): string {
  const provider = codexSettings(t)
    .filter(([k]) => k.startsWith('model_providers.toolproof.'))
    .map(([k, v]) => `${k.slice('model_providers.toolproof.'.length)} = ${v}`);
  const profile = codexSettings(t)
    .filter(([k]) => !k.startsWith('model_providers.'))
    .map(([k, v]) => `${k} = ${v}`);
  return [
    '# Written by `toolproof launch codex --write`: run `codex --profile toolproof`.',
    '[profiles.toolproof]',
    ...profile,
    '',
    '[model_providers.toolproof]',
    ...provider,
    '',
  ].join('\n');
}

/** opencode's (and Kilo's) config: a provider for toolproof with the model's limits. */
function opencodeConfig(t: Target): Record<string, unknown> {
  return {
    model: `toolproof/${t.model}`,
    small_model: `toolproof/${t.model}`,
    provider: {
      toolproof: {
        npm: '@ai-sdk/openai-compatible',
        name: 'toolproof',
        options: { baseURL: `${t.base}/v1`, apiKey: t.key },
        models: {
          [t.model]: {
            name: t.model,
            tool_call: true,
            ...(t.window ? { limit: { context: t.window, output: t.maxOutput } } : {}),
            // PDFs for every model: toolproof sends their text upstream (docs/content.md); without
            // `pdf` opencode's read tool said "PDF read successfully" and sent the model nothing
            // of it. Images only for a model toolproof says can see.
            attachment: true,
            modalities: { input: t.vision ? ['text', 'image', 'pdf'] : ['text', 'pdf'], output: ['text'] },
          },
        },
      },
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep merge of plain objects; `add` wins, arrays are replaced. */
export function mergeDeep(base: unknown, add: unknown): unknown {
  if (!isRecord(base) || !isRecord(add)) return add;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(add)) out[k] = mergeDeep(base[k], v);
  return out;
}

/** Merges `add` into a JSON file's text; a file that is not plain JSON (comments) is refused. */
export function mergeJsonText(current: string | undefined, add: Record<string, unknown>): string {
  let base: unknown = {};
  if (current !== undefined && current.trim() !== '') {
    try {
      base = JSON.parse(current);
    } catch (err) {
      throw new Error(
        `it is not plain JSON (${(err as Error).message}); add the settings by hand (docs/agents-setup.md)`,
      );
    }
  }
  return `${JSON.stringify(mergeDeep(base, add), null, 2)}\n`;
}

/** Qwen Code's placeholder for its session id in a custom header, filled in on every request. */
export const QWEN_SESSION_ID = '$' + '{session_id}';

function piExtension(t: Target): string {
  const api =
    t.api === 'messages'
      ? 'anthropic-messages'
      : t.api === 'responses'
        ? 'openai-responses'
        : 'openai-completions';
  const provider = {
    name: 'toolproof',
    baseUrl: t.api === 'messages' ? t.base : `${t.base}/v1`,
    api,
    // The name of the variable that holds the key: the key itself is in no file.
    apiKey: 'TOOLPROOF_API_KEY',
    models: [
      {
        id: t.model,
        name: t.model,
        reasoning: false,
        // Images only when toolproof says the model sees: pi leaves them out (with a note) otherwise.
        input: t.vision ? ['text', 'image'] : ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        ...(t.window ? { contextWindow: t.window } : {}),
        maxTokens: t.maxOutput,
        // On chat completions pi names its session (`session_id`, `x-session-affinity`) only when
        // asked; without it two runs that open alike share one inspector session and one affinity
        // key (docs/affinity.md). Responses sends it anyway. On the model: pi 0.73.1 reads a
        // registered provider's models' own compat, not the provider's (so the system prompt's
        // role and reasoning_effort are set here too: `system`, none, what every backend takes).
        compat: {
          sendSessionAffinityHeaders: true,
          supportsDeveloperRole: false,
          supportsReasoningEffort: false,
        },
      },
    ],
  };
  // On Messages pi sends no session id: its session goes in `metadata.user_id` (as Claude Code
  // puts its own), which toolproof reads and does not send upstream.
  const metadata =
    t.api === 'messages'
      ? "\n  pi.on('before_provider_request', (event, ctx) => {\n    const id = ctx.sessionManager.getSessionId();\n    if (!id || event.payload?.metadata?.user_id) return undefined;\n    return { ...event.payload, metadata: { ...event.payload?.metadata, user_id: id } };\n  });"
      : '';
  return [
    '// Written by `toolproof launch pi` for one run; removed when pi exits.',
    `export default function (pi) {\n  pi.registerProvider('toolproof', ${JSON.stringify(provider)});${metadata}\n}`,
    '',
  ].join('\n');
}

function continueConfig(t: Target): string {
  return toYaml({
    name: 'toolproof',
    version: '1.0.0',
    schema: 'v1',
    models: [
      {
        name: t.model,
        provider: 'openai',
        model: t.model,
        apiBase: `${t.base}/v1`,
        apiKey: t.key,
        roles: ['chat', 'edit', 'apply'],
        capabilities: ['tool_use'],
        defaultCompletionOptions: {
          ...(t.window ? { contextLength: t.window } : {}),
          maxTokens: t.maxOutput,
        },
      },
    ],
  });
}

/**
 * Cline's providers file (`cline auth` writes the same). Its schema requires `updatedAt`, an ISO
 * date-time: a file without it is dropped whole, without a word, and Cline falls back to an empty
 * provider, that is to the vendor's own URL ("Cannot connect to API" offline).
 */
export function clineProviders(t: Target, now: Date = new Date()): string {
  return JSON.stringify({
    version: 1,
    lastUsedProvider: 'openai-compatible',
    modes: {},
    providers: {
      'openai-compatible': {
        settings: {
          provider: 'openai-compatible',
          apiKey: t.key,
          model: t.model,
          baseUrl: `${t.base}/v1`,
          ...(t.window ? { contextWindow: t.window } : {}),
          maxTokens: t.maxOutput,
        },
        updatedAt: now.toISOString(),
        tokenSource: 'manual',
      },
    },
  });
}

/** An agent CLI's recipe: it has a binary. */
export type CliRecipe = AgentRecipe & { bin: string };

export const RECIPES: readonly CliRecipe[] = [
  {
    id: 'claude',
    name: 'Claude Code',
    bin: 'claude',
    pkg: '@anthropic-ai/claude-code',
    // Its first request, tests/fixtures/agents/claude/01-*: 48.7 KB of JSON at 4 characters a token.
    promptTokens: 12_200,
    apis: ['messages'],
    headless: (args) =>
      hasFlag(args, ['-p', '--print']) &&
      !hasFlag(args, [
        '--permission-mode',
        '--allowedTools',
        '--allowed-tools',
        '--disallowedTools',
        '--disallowed-tools',
        '--dangerously-skip-permissions',
        '--permission-prompt-tool',
      ])
        ? { args: [...args, '--permission-mode', 'acceptEdits'], added: '--permission-mode acceptEdits' }
        : undefined,
    env: claudeEnv,
    unset: CLAUDE_UNSET,
    quiet: CLAUDE_QUIET,
    files: (t) => ({ 'claude-settings.json': claudeSettings(t) }),
    args: (t) => ['--settings', `${t.dir}/claude-settings.json`],
    write: {
      path: (env) => join(home(env), '.claude', 'settings.json'),
      merge: (current, t) => mergeJsonText(current, { env: { ...claudeEnv(t), ...CLAUDE_QUIET } }),
      run: 'claude',
    },
  },
  {
    id: 'codex',
    name: 'Codex',
    bin: 'codex',
    pkg: '@openai/codex',
    // Its first request, tests/fixtures/agents/codex/01-*: 40.3 KB of JSON at 4 characters a token.
    promptTokens: 10_100,
    apis: ['responses'],
    headless: (args) =>
      args[0] === 'exec' &&
      !hasFlag(args, ['-s', '--sandbox', '--full-auto', '--dangerously-bypass-approvals-and-sandbox']) &&
      !args.some((a) => a.startsWith('sandbox_mode='))
        ? {
            // Right after `exec`, where `codex exec resume …` takes it too.
            args: ['exec', '--sandbox', 'workspace-write', ...args.slice(1)],
            added: '--sandbox workspace-write',
          }
        : undefined,
    env: (t) => ({ TOOLPROOF_API_KEY: t.key }),
    args: (t) => codexSettings(t).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    quietArgs: CODEX_QUIET.flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    write: {
      path: (env) => join(env.CODEX_HOME || join(home(env), '.codex'), 'config.toml'),
      merge: (current, t) =>
        replaceTomlTables(
          current ?? '',
          ['profiles.toolproof', 'model_providers.toolproof'],
          codexProfile(t),
        ),
      run: 'TOOLPROOF_API_KEY=<your key> codex --profile toolproof',
    },
  },
  {
    id: 'opencode',
    name: 'opencode',
    bin: 'opencode',
    pkg: 'opencode-ai',
    // Its first request, tests/fixtures/agents/opencode/02-* (01 is its title request): 29.5 KB at 4 characters a token.
    promptTokens: 7_400,
    apis: ['chat'],
    env: (t) => ({ OPENCODE_CONFIG_CONTENT: JSON.stringify(opencodeConfig(t)) }),
    quiet: {
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_SHARE: '1',
    },
    write: {
      path: (env) => join(configHome(env), 'opencode', 'opencode.json'),
      merge: (current, t) => mergeJsonText(current, opencodeConfig(t)),
      run: 'opencode',
    },
  },
  {
    id: 'qwen',
    name: 'Qwen Code',
    bin: 'qwen',
    pkg: '@qwen-code/qwen-code',
    // Its first request, tests/fixtures/agents/qwen/01-*: 75.9 KB of JSON at 4 characters a token.
    promptTokens: 19_000,
    apis: ['chat'],
    headless: (args) =>
      hasFlag(args, ['-p', '--prompt']) && !hasFlag(args, ['-y', '--yolo', '--approval-mode'])
        ? { args: [...args, '--approval-mode', 'auto-edit'], added: '--approval-mode auto-edit' }
        : undefined,
    env: (t) => ({
      OPENAI_API_KEY: t.key,
      OPENAI_BASE_URL: `${t.base}/v1`,
      OPENAI_MODEL: t.model,
      QWEN_CODE_MAX_OUTPUT_TOKENS: String(t.maxOutput),
      // System settings override the user's and the project's, and live in the run's folder.
      QWEN_CODE_SYSTEM_SETTINGS_PATH: `${t.dir}/qwen-settings.json`,
    }),
    files: (t) => ({
      'qwen-settings.json': JSON.stringify({
        model: {
          generationConfig: {
            ...(t.window ? { contextWindowSize: t.window } : {}),
            // What the model reads. Left to Qwen Code, it guesses from the model's name, takes a
            // served name it does not know for text-only (its read tool answers a screenshot with
            // "This model does not support image input"), and reads a PDF with pdftotext, which
            // few machines have. Images where toolproof says the model sees or does not know (it
            // answers a backend's refusal with its note); PDFs always: toolproof sends their text.
            modalities: { image: t.vision ?? true, pdf: true },
            // Qwen Code sends no session id of its own: this header, its session id filled in on
            // every request, names its sessions to toolproof (docs/affinity.md).
            customHeaders: { 'x-session-affinity': QWEN_SESSION_ID },
          },
        },
        // What lets Qwen Code fill `${session_id}` in a header (0.24: off, the header dropped).
        outboundCorrelation: { allowDynamicHeaderValues: true },
        general: { enableAutoUpdate: false },
        telemetry: { enabled: false },
        privacy: { usageStatisticsEnabled: false },
      }),
    }),
    args: (t) => ['--auth-type', 'openai', '-m', t.model],
    quiet: { QWEN_TELEMETRY_ENABLED: '0', QWEN_USAGE_STATISTICS_ENABLED: '0' },
  },
  {
    id: 'pi',
    name: 'pi',
    bin: 'pi',
    pkg: '@mariozechner/pi-coding-agent',
    // Its first request, tests/fixtures/agents/pi/01-*: 5.7 KB of JSON at 4 characters a token.
    promptTokens: 1_400,
    apis: ['chat', 'responses', 'messages'],
    env: (t) => ({ TOOLPROOF_API_KEY: t.key }),
    // A provider registered by a one-run extension: ~/.pi/agent (sessions, settings) stays as it is.
    files: (t) => ({ 'toolproof-pi.mjs': piExtension(t) }),
    args: (t) => ['-e', `${t.dir}/toolproof-pi.mjs`, '--provider', 'toolproof', '--model', t.model],
    quiet: { PI_OFFLINE: '1', PI_SKIP_VERSION_CHECK: '1', PI_TELEMETRY: '0' },
  },
  {
    id: 'cn',
    name: 'Continue CLI',
    bin: 'cn',
    pkg: '@continuedev/cli',
    apis: ['chat'],
    files: (t) => ({ 'continue.yaml': continueConfig(t) }),
    args: (t) => ['--config', `${t.dir}/continue.yaml`],
    quiet: { CONTINUE_CLI_ENABLE_TELEMETRY: '0', CONTINUE_METRICS_ENABLED: '0' },
  },
  {
    id: 'kilo',
    name: 'Kilo CLI',
    bin: 'kilo',
    pkg: '@kilocode/cli',
    // Its first request as llama-server counted it (the 16k row of tests/agents/session-files.test.ts).
    promptTokens: 12_600,
    apis: ['chat'],
    env: (t) => ({ KILO_CONFIG_CONTENT: JSON.stringify(opencodeConfig(t)) }),
    quiet: {
      KILO_DISABLE_AUTOUPDATE: '1',
      KILO_DISABLE_MODELS_FETCH: '1',
      KILO_DISABLE_SHARE: '1',
      KILO_TELEMETRY_LEVEL: 'off',
      KILO_DISABLE_SESSION_INGEST: '1',
    },
    write: {
      path: (env) => join(configHome(env), 'kilo', 'kilo.json'),
      merge: (current, t) => mergeJsonText(current, opencodeConfig(t)),
      run: 'kilo',
    },
  },
  {
    id: 'cline',
    name: 'Cline CLI',
    bin: 'cline',
    pkg: 'cline',
    // Its first request, tests/fixtures/agents/cline/01-*: 21.8 KB of JSON at 4 characters a token.
    promptTokens: 5_500,
    apis: ['chat'],
    env: (t) => ({
      // Its provider settings file, moved to the run's folder: its sessions and settings stay where they are.
      CLINE_PROVIDER_SETTINGS_PATH: `${t.dir}/cline-providers.json`,
      // The session runs in this process. By default it goes to Cline's hub daemon (one per machine,
      // on a fixed port, left running after the CLI exits), which reads the user's own providers
      // file, not this one; a daemon it starts also keeps the CLI from exiting.
      CLINE_SESSION_BACKEND_MODE: 'local',
    }),
    files: (t) => ({ 'cline-providers.json': clineProviders(t) }),
    args: (t) => ['-P', 'openai-compatible', '-m', t.model],
    quiet: { CLINE_NO_AUTO_UPDATE: '1', DO_NOT_TRACK: '1' },
  },
  {
    id: 'grok',
    name: 'Grok CLI',
    bin: 'grok',
    pkg: '@vibe-kit/grok-cli',
    apis: ['chat'],
    // No window setting: it sends what it has and relies on the server's overflow error.
    env: (t) => ({
      GROK_API_KEY: t.key,
      GROK_BASE_URL: `${t.base}/v1`,
      GROK_MODEL: t.model,
      GROK_MAX_TOKENS: String(t.maxOutput),
    }),
    // Written at each start where none is: its default model, not this run's.
    startupFiles: [{ path: join('.grok', 'settings.json'), fresh: isGrokDefaultProject }],
  },
];

/**
 * The OpenAI Agents SDK 0.20 reads OPENAI_API_KEY and OPENAI_DEFAULT_MODEL (lowercased, for an
 * Agent without `model`; also what decides whether GPT-5 reasoning settings are added), its
 * `openai` client OPENAI_BASE_URL; tracing exports to the vendor unless
 * OPENAI_AGENTS_DISABLE_TRACING. It has no variable for chat vs Responses, the window or the output
 * limit: the program passes them (setOpenAIAPI, modelSettings.maxTokens), from the TOOLPROOF_*
 * variables set here.
 */
function openaiAgentsEnv(t: Target): Record<string, string> {
  return {
    OPENAI_BASE_URL: `${t.base}/v1`,
    OPENAI_API_KEY: t.key,
    OPENAI_DEFAULT_MODEL: t.model,
    TOOLPROOF_MODEL: t.model,
    TOOLPROOF_OPENAI_API: t.api === 'chat' ? 'chat_completions' : 'responses',
    ...(t.window ? { TOOLPROOF_CONTEXT_WINDOW: String(t.window) } : {}),
    TOOLPROOF_MAX_OUTPUT_TOKENS: String(t.maxOutput),
  };
}

/** The SDKs: the user's program runs (after `--`) with the environment each SDK reads. */
export const SDK_RECIPES: readonly AgentRecipe[] = [
  {
    id: 'claude-agent-sdk',
    name: 'Claude Agent SDK',
    pkg: '@anthropic-ai/claude-agent-sdk',
    sdk: true,
    apis: ['messages'],
    // query() runs the Claude Code binary its platform package ships, with `options.env`, which
    // defaults to the program's own environment. Claude Code's settings files apply over it unless
    // the program passes `settings` or `settingSources: []`: the launch's settings file (the one
    // `claude` gets with --settings) is named in TOOLPROOF_CLAUDE_SETTINGS for `settings`, and
    // a user's file that would send the run elsewhere is named before it starts.
    env: (t) => ({ ...claudeEnv(t), TOOLPROOF_CLAUDE_SETTINGS: `${t.dir}/claude-settings.json` }),
    unset: CLAUDE_UNSET,
    quiet: CLAUDE_QUIET,
    files: (t) => ({ 'claude-settings.json': claudeSettings(t) }),
    warnings: (env, cwd, t) =>
      claudeShadowing(env, cwd, claudeEnv(t), CLAUDE_UNSET).map(
        ({ path, names }) =>
          `${path} sets ${names.join(', ')} in its env, which Claude Code applies over this run's: ` +
          "the SDK's query() would use them unless your program passes " +
          "`settings: process.env.TOOLPROOF_CLAUDE_SETTINGS` (this run's settings file, which ranks above it) " +
          'or `settingSources: []` in its options',
      ),
  },
  {
    id: 'openai-agents',
    name: 'OpenAI Agents SDK',
    pkg: '@openai/agents',
    sdk: true,
    // Its default is Responses; `--api chat` sets TOOLPROOF_OPENAI_API=chat_completions for setOpenAIAPI().
    apis: ['responses', 'chat'],
    env: openaiAgentsEnv,
    // Would point the Responses websocket transport elsewhere.
    unset: ['OPENAI_WEBSOCKET_BASE_URL'],
    quiet: { OPENAI_AGENTS_DISABLE_TRACING: '1' },
  },
];

export function findRecipe(id: string): AgentRecipe | undefined {
  return RECIPES.find((r) => r.id === id) ?? SDK_RECIPES.find((r) => r.id === id);
}

/** Lowercase letters and digits only: `Claude Code`, `claude-code` and `claude_code` read alike. */
function fold(word: string): string {
  return word.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * Edit distance (insertions, deletions, substitutions, two neighbours swapped: `clien`), for names
 * of a few dozen characters.
 */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  return d[a.length]![b.length]!;
}

/**
 * What a user may call an agent: its id, its name (with and without "CLI", and its binary with
 * it: `codex-cli`), its npm package's scope and name, apart and together (`openai-codex`).
 */
function namesOf(r: AgentRecipe): string[] {
  const [scope, base] = r.pkg.startsWith('@') ? r.pkg.slice(1).split('/') : [undefined, r.pkg];
  return [
    r.id,
    r.name,
    r.name.replace(/ CLI$/, ''),
    `${r.bin ?? r.id} cli`,
    base === 'cli' ? '' : (base ?? ''),
    scope ?? '',
    scope && base ? `${scope} ${base}` : '',
  ]
    .map(fold)
    .filter(Boolean);
}

/**
 * The agent an unknown name most likely means (`claud`, `claude-code`, `continue`, `kilocode`), or
 * undefined when none is close: a name it goes by (namesOf) within a third of its length in edits.
 */
export function nearestRecipe(given: string): AgentRecipe | undefined {
  const word = fold(given);
  if (!word) return undefined;
  let best: { recipe: AgentRecipe; edits: number } | undefined;
  for (const recipe of [...RECIPES, ...SDK_RECIPES]) {
    for (const name of namesOf(recipe)) {
      const edits = distance(word, name);
      if (edits <= Math.max(1, Math.floor(name.length / 3)) && (!best || edits < best.edits))
        best = { recipe, edits };
    }
  }
  return best?.recipe;
}
