/**
 * How each pinned agent CLI is run non-interactively against a local endpoint: its command line,
 * environment and configuration files, in a fresh temporary HOME and working directory
 * (/work/shared/agents/README.md has the findings these follow).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SUITE_KEY as API_KEY, suitePlan } from './plan.js';
import { isSdk, prepareSdkDirect, type SdkRun, sdkEnv, sdkProgramArgs } from './sdk.js';

export type AgentId =
  | 'claude'
  | 'codex'
  | 'opencode'
  | 'qwen'
  | 'pi'
  | 'cn'
  | 'kilo'
  | 'grok'
  | 'cline'
  | 'openai-agents'
  | 'claude-agent-sdk';
export type PiApi = 'openai-completions' | 'openai-responses' | 'anthropic-messages';

export interface AgentTarget {
  /** The origin requests go to (toolproof's, or the backend's for a direct run), without /v1. */
  origin: string;
  model: string;
  /** pi only: which of its APIs it speaks. */
  piApi?: PiApi;
  /** Claude Code only: the names it sends for its main and its small/fast model. */
  claudeModels?: { main: string; small: string };
  /**
   * Codex only: a model catalog entry for `model` (model_catalog_json), so its tools follow the
   * catalog (e.g. `apply_patch_tool_type: "freeform"`) instead of the defaults for unknown models.
   */
  codexCatalog?: Record<string, unknown>;
  /** Codex only: `[features]` lines. */
  codexFeatures?: Record<string, boolean>;
  /** Codex only: more top-level config.toml lines (e.g. `model_auto_compact_token_limit = 2000`). */
  codexConfig?: string[];
  /** The SDKs only: the API (`--api`) and whether the program streams (lib/sdk.ts). */
  sdk?: SdkRun;
  /** More of the agent's environment, through toolproof (Claude Code's TRACEPARENT). */
  env?: Record<string, string>;
}

/** Codex with apply_patch as a freeform (custom) tool with its Lark grammar, as its own catalog declares it. */
export const CODEX_FREEFORM: Pick<AgentTarget, 'codexCatalog'> = {
  codexCatalog: { apply_patch_tool_type: 'freeform' },
};

/** The fields Codex 0.171 needs in a catalog entry; the rest keep its defaults. */
function codexCatalogEntry(model: string, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    slug: model,
    display_name: model,
    description: 'self-hosted model behind toolproof',
    default_reasoning_level: null,
    supported_reasoning_levels: [],
    shell_type: 'shell_command',
    visibility: 'list',
    supported_in_api: true,
    priority: 1,
    apply_patch_tool_type: null,
    truncation_policy: { mode: 'bytes', limit: 10000 },
    supports_parallel_tool_calls: false,
    context_window: 32768,
    experimental_supported_tools: [],
    input_modalities: ['text'],
    support_verbosity: false,
    base_instructions:
      "You are a coding agent in the user's workspace. Use the tools to do what the user asks, then answer briefly.",
    ...extra,
  };
}

export interface AgentRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The run's working directory (the task's files are there). */
  cwd: string;
  home: string;
  ms: number;
}

/** Everything a CLI could pick up from the parent process is left out: only what is set here. */
function baseEnv(home: string, cwd: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    PWD: cwd,
    USER: 'agent',
    SHELL: '/bin/bash',
    TERM: 'dumb',
    NO_COLOR: '1',
    LANG: 'C.UTF-8',
    TMPDIR: join(home, 'tmp'),
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    CI: 'true',
  };
}

function writeJson(path: string, value: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

interface Prepared {
  args: string[];
  env: Record<string, string>;
}

/**
 * Straight to the backend, for the agents whose manual setup is the launcher's own recipe (Continue,
 * Kilo, Grok CLI, Cline): the recipe's environment, files and arguments, pointed at the backend.
 */
function prepareFromRecipe(
  agent: AgentId,
  target: AgentTarget,
  task: string,
  home: string,
  cwd: string,
): Prepared {
  const dir = join(home, 'launch');
  mkdirSync(dir, { recursive: true });
  const plan = suitePlan(agent, target, dir, HEADLESS[agent]!(task));
  for (const [path, text] of Object.entries(plan.files)) writeFileSync(path, text);
  if (agent === 'kilo')
    writeJson(join(home, '.config', 'kilo', 'kilo.json'), {
      permission: { edit: 'allow', bash: 'allow', webfetch: 'deny' },
    });
  return { args: plan.args, env: { ...baseEnv(home, cwd), KILO_NO_DAEMON: '1', ...plan.env } };
}

function prepare(
  agent: AgentId,
  target: AgentTarget,
  task: string,
  home: string,
  cwd: string,
  bin: string,
): Prepared {
  const env = baseEnv(home, cwd);
  const { origin, model } = target;
  switch (agent) {
    case 'cn':
    case 'kilo':
    case 'grok':
    case 'cline':
      return prepareFromRecipe(agent, target, task, home, cwd);
    case 'openai-agents':
    case 'claude-agent-sdk':
      return prepareSdkDirect(agent, target, task, env, join(home, 'tmp'), bin);
    case 'claude': {
      const names = target.claudeModels ?? { main: model, small: model };
      Object.assign(env, {
        ANTHROPIC_BASE_URL: origin,
        ANTHROPIC_API_KEY: API_KEY,
        ANTHROPIC_MODEL: names.main,
        ANTHROPIC_DEFAULT_SONNET_MODEL: names.main,
        ANTHROPIC_DEFAULT_OPUS_MODEL: names.main,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: names.small,
        ANTHROPIC_SMALL_FAST_MODEL: names.small,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
      });
      return { args: HEADLESS.claude!(task), env };
    }
    case 'codex': {
      const codexHome = join(home, '.codex');
      mkdirSync(codexHome, { recursive: true });
      const catalog: string[] = [];
      if (target.codexCatalog) {
        const path = join(codexHome, 'catalog.json');
        writeJson(path, { models: [codexCatalogEntry(model, target.codexCatalog)] });
        catalog.push(`model_catalog_json = "${path}"`);
      }
      const features = Object.entries(target.codexFeatures ?? {}).map(([k, v]) => `${k} = ${v}`);
      writeFileSync(
        join(codexHome, 'config.toml'),
        [
          `model = "${model}"`,
          'model_provider = "selfhosted"',
          'check_for_update_on_startup = false',
          ...catalog,
          ...(target.codexConfig ?? []),
          '',
          ...(features.length ? ['[features]', ...features, ''] : []),
          '[analytics]',
          'enabled = false',
          '',
          '[model_providers.selfhosted]',
          'name = "self-hosted"',
          `base_url = "${origin}/v1"`,
          'wire_api = "responses"',
          'env_key = "SELFHOSTED_API_KEY"',
          '',
        ].join('\n'),
      );
      Object.assign(env, { CODEX_HOME: codexHome, SELFHOSTED_API_KEY: API_KEY });
      return { args: HEADLESS.codex!(task), env };
    }
    case 'opencode': {
      const config = {
        $schema: 'https://opencode.ai/config.json',
        model: `selfhosted/${model}`,
        small_model: `selfhosted/${model}`,
        permission: { edit: 'allow', bash: 'allow', webfetch: 'deny' },
        provider: {
          selfhosted: {
            npm: '@ai-sdk/openai-compatible',
            name: 'self-hosted',
            options: { baseURL: `${origin}/v1`, apiKey: API_KEY },
            models: { [model]: { name: model, tool_call: true, limit: { context: 32768, output: 4096 } } },
          },
        },
      };
      Object.assign(env, {
        OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_SHARE: '1',
      });
      return { args: HEADLESS.opencode!(task), env };
    }
    case 'qwen': {
      writeJson(join(home, '.qwen', 'settings.json'), {
        telemetry: { enabled: false },
        privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
      });
      Object.assign(env, {
        OPENAI_API_KEY: API_KEY,
        OPENAI_BASE_URL: `${origin}/v1`,
        OPENAI_MODEL: model,
        QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
      });
      return { args: ['--auth-type', 'openai', '-m', model, ...HEADLESS.qwen!(task)], env };
    }
    case 'pi': {
      const api = target.piApi ?? 'openai-completions';
      writeJson(join(home, '.pi', 'agent', 'models.json'), {
        providers: {
          selfhosted: {
            baseUrl: api === 'anthropic-messages' ? origin : `${origin}/v1`,
            api,
            apiKey: API_KEY,
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [{ id: model }],
          },
        },
      });
      env.PI_OFFLINE = '1';
      return {
        args: ['-p', '--provider', 'selfhosted', '--model', model, '--no-session', '--offline', task],
        env,
      };
    }
  }
}

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** `node` arguments that run the toolproof CLI from any working directory (tsx's loader by its path). */
export const TOOLPROOF_CLI: readonly string[] = [
  '--import',
  pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href,
  join(ROOT, 'cli', 'toolproof.ts'),
];

/**
 * The agent's own non-interactive arguments (what a user types after `toolproof launch <agent> --`):
 * the launcher's runs (tests/agents/launch.test.ts too) and the direct ones.
 */
export const HEADLESS: Record<string, (task: string) => string[]> = {
  claude: (t) => [
    '-p',
    t,
    '--permission-mode',
    'acceptEdits',
    '--allowedTools',
    'Write,Read,Edit,Bash',
    '--no-session-persistence',
  ],
  codex: (t) => [
    'exec',
    '--skip-git-repo-check',
    '--ephemeral',
    '--color',
    'never',
    '--dangerously-bypass-approvals-and-sandbox',
    t,
  ],
  opencode: (t) => ['run', '--pure', t],
  qwen: (t) => ['--yolo', t],
  pi: (t) => ['-p', '--no-session', '--offline', t],
  cn: (t) => ['-p', '--auto', t],
  kilo: (t) => ['run', t],
  grok: (t) => ['-p', t, '--max-tool-rounds', '20'],
  cline: (t) => [t],
};

const PI_LAUNCH_API: Record<PiApi, string> = {
  'openai-completions': 'chat',
  'openai-responses': 'responses',
  'anthropic-messages': 'messages',
};

/**
 * Through toolproof, every run is `toolproof launch <agent> --url <origin> --model <model> -- <the
 * agent's own arguments>`: the launcher's environment and temporary config, so every suite run
 * tests the launcher. What a case adds on top is what a user would add: Codex's `-c` overrides
 * (catalog, features, config lines) after `--`, opencode's permissions in its own config file.
 */
export function prepareLaunch(
  agent: string,
  target: AgentTarget,
  task: string,
  home: string,
  cwd: string,
  bin: string,
  /** The agent's own arguments for this run, instead of HEADLESS (a resume, another output format). */
  ownArgs?: string[],
): Prepared {
  const env = baseEnv(home, cwd);
  env.PATH = `${dirname(bin)}:${env.PATH}`;
  Object.assign(env, { KILO_NO_DAEMON: '1', QWEN_CODE_SUPPRESS_YOLO_WARNING: '1', PI_OFFLINE: '1' });
  // An SDK: its program, run by this node.
  const own = isSdk(agent)
    ? (t: string) => [process.execPath, ...sdkProgramArgs(agent, target, t)]
    : HEADLESS[agent];
  if (!own) throw new Error(`${agent}: no headless arguments`);
  if (isSdk(agent)) Object.assign(env, sdkEnv(agent, bin));
  Object.assign(env, target.env);
  let userArgs = ownArgs ?? own(task);
  if (agent === 'codex') {
    const overrides: string[] = [];
    if (target.codexCatalog) {
      const path = join(home, '.codex-catalog.json');
      writeJson(path, { models: [codexCatalogEntry(target.model, target.codexCatalog)] });
      overrides.push('-c', `model_catalog_json=${JSON.stringify(path)}`);
    }
    for (const [k, v] of Object.entries(target.codexFeatures ?? {}))
      overrides.push('-c', `features.${k}=${v}`);
    for (const line of target.codexConfig ?? []) {
      const m = /^\s*([\w.]+)\s*=\s*(.+?)\s*$/.exec(line);
      if (m) overrides.push('-c', `${m[1]}=${m[2]}`);
    }
    userArgs = [...overrides, ...userArgs];
  }
  if (agent === 'opencode' || agent === 'kilo') {
    // What a user allows in their own opencode / Kilo config.
    writeJson(join(home, '.config', agent, `${agent}.json`), {
      permission: { edit: 'allow', bash: 'allow', webfetch: 'deny' },
    });
  }
  const model = target.claudeModels?.main ?? target.model;
  const args = [
    ...TOOLPROOF_CLI,
    'launch',
    agent,
    '--url',
    target.origin,
    '--model',
    model,
    ...(target.piApi ? ['--api', PI_LAUNCH_API[target.piApi]] : []),
    ...(target.sdk?.api ? ['--api', target.sdk.api] : []),
    '--',
    ...userArgs,
  ];
  return { args, env };
}

export interface RunOptions {
  bin: string;
  agent: AgentId;
  target: AgentTarget;
  /** `toolproof` runs the agent through `toolproof launch`; `direct` configures it by hand for the backend. */
  via?: 'toolproof' | 'direct';
  task: string;
  dirs: RunDirs;
  /** Files the working directory starts with. */
  files?: Record<string, string | Buffer>;
  timeoutMs?: number;
  /** Through toolproof: the agent's own arguments (after `--`) instead of HEADLESS's. */
  args?: string[];
}

export interface RunDirs {
  home: string;
  cwd: string;
}

/** A fresh temporary HOME and working directory for one run. */
export function makeRunDirs(agent: AgentId): RunDirs {
  const home = mkdtempSync(join(tmpdir(), `tp-${agent}-home-`));
  const cwd = mkdtempSync(join(tmpdir(), `tp-${agent}-work-`));
  mkdirSync(join(home, 'tmp'), { recursive: true });
  return { home, cwd };
}

/** Runs one agent to its end (or the timeout, which kills its process group). */
export function runAgent(options: RunOptions): Promise<AgentRun> {
  const { home, cwd } = options.dirs;
  for (const [name, text] of Object.entries(options.files ?? {})) writeFileSync(join(cwd, name), text);
  const launched = options.via === 'toolproof';
  const { args, env } = launched
    ? prepareLaunch(options.agent, options.target, options.task, home, cwd, options.bin, options.args)
    : prepare(options.agent, options.target, options.task, home, cwd, options.bin);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(launched ? process.execPath : options.bin, args, {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      stderr += `\n[agents suite: killed after ${options.timeoutMs ?? 120_000} ms]\n`;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, options.timeoutMs ?? 120_000);
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      // Whatever the agent left running in its group (an LSP, a shell) goes with it.
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
      resolve({ exitCode, signal, stdout, stderr, cwd, home, ms: Date.now() - started });
    });
  });
}
