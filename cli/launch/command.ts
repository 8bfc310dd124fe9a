/**
 * `toolproof launch <agent>`: finds toolproof (or starts it), picks the model, reads its window,
 * and runs the agent pointed at it with a per-run environment and temporary files; `--print`
 * shows that instead, `--write` writes it into the agent's own config file (with a backup).
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import type { CliIO } from '../probe/command.js';
import { runAgent } from './agent-process.js';
import { absentStartupFiles, removeStartupFiles } from './startup-files.js';
import { agentCacheDirs, findBin, findPackage } from './find-bin.js';
import { launchersDir, otherLaunchers, register, rmdirQuietly } from './launchers.js';
import { type ModelInfo, readModels } from './models.js';
import { buildPlan, childEnv, maskKey, renderPlan, shellQuote } from './plan.js';
import { chooseReserve } from './reserve.js';
import {
  type AgentApi,
  type AgentRecipe,
  findRecipe,
  nearestRecipe,
  RECIPES,
  SDK_RECIPES,
  type Target,
} from './recipes.js';
import {
  defaultUrl,
  fetchModels,
  HttpError,
  findServer,
  LAUNCHERS_DIR,
  normalizeUrl,
  readiness,
  type StartedServer,
  startServer,
  upstreamRefusal,
} from './server.js';

export const LAUNCH_HELP = `Usage: toolproof launch <agent> [options] [-- agent arguments…]
       toolproof launch <sdk> [options] -- <your program and its arguments>

Runs a coding agent pointed at toolproof, configured for the model it serves: base URL, model
names, the model's context window (auto-compaction) and output limit, telemetry and update
checks off. Your own config files are not changed (unless --write).

Agents: ${RECIPES.map((r) => r.id).join(', ')}
SDKs:   ${SDK_RECIPES.map((r) => r.id).join(', ')} (your program runs with the variables the SDK reads)

Options:
  --model NAME   the model (default: the only one toolproof serves; else it asks, or lists them)
  --url URL      toolproof's address (default: http://127.0.0.1:$TOOLPROOF_PORT or :8787; when
                 nothing answers on this machine, \`toolproof --serve\` is started there and
                 stopped when the agent exits)
  --upstream URL the model server behind a toolproof this command starts (its
                 TOOLPROOF_UPSTREAM_URL: vLLM http://gpu:8000/v1, llama-server http://host:8080/v1;
                 a server started with --api-key takes its key from TOOLPROOF_UPSTREAM_API_KEY)
  --key KEY      toolproof's API key (default: TOOLPROOF_API_KEY, else, on this machine, the
                 first key of TOOLPROOF_API_KEYS that toolproof takes); never printed
  --api API      for an agent that speaks several: pi (chat, responses or messages),
                 openai-agents (responses or chat: TOOLPROOF_OPENAI_API for setOpenAIAPI)
  --print        show what would be set (keys masked) and exit
  --write        write the settings into the agent's own config file (a backup is kept) and exit
  -h, --help

Examples:
  toolproof launch claude
  toolproof launch claude -- -p "create proof.txt containing 7391, then say done"
  toolproof launch codex --model qwen3-coder -- exec "fix the failing test"
  toolproof launch opencode --upstream http://gpu:8000/v1
  npx toolproof launch opencode --print
  toolproof launch openai-agents --api chat -- node app.mjs
`;

class UsageError extends Error {}

export interface LaunchOptions {
  agent: AgentRecipe;
  model?: string;
  url?: string;
  /** The model server behind a toolproof this command starts (its TOOLPROOF_UPSTREAM_URL). */
  upstream?: string;
  key?: string;
  api?: AgentApi;
  print: boolean;
  write: boolean;
  agentArgs: string[];
}

/**
 * An option the launcher does not take, most often the agent's own given before `--`
 * (`toolproof launch claude -p "task"`): Node's message ("To specify a positional argument starting
 * with a '-', place it … after '--'") named neither the agent nor the command to type. This one
 * names the launcher's options and the command with the rest after `--` (a key given is not shown).
 */
function unknownOption(err: unknown, own: readonly string[], after: readonly string[]): string | undefined {
  if ((err as { code?: unknown }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const mine: string[] = [];
  const theirs: string[] = [];
  let agent: string | undefined;
  let option: string | undefined;
  for (let i = 0; i < own.length; i++) {
    const word = own[i]!;
    const flag = /^(--[a-z]+)(=.*)?$/.exec(word);
    if (flag && OWN_FLAGS.has(flag[1]!)) {
      const valued = VALUED.has(flag[1]!);
      if (flag[1] === '--key') mine.push(flag[2] === undefined ? '--key' : '--key=<key>');
      else mine.push(shellQuote(word));
      if (valued && flag[2] === undefined && i + 1 < own.length) {
        const value = own[++i]!;
        mine.push(flag[1] === '--key' ? '<key>' : shellQuote(value));
      }
    } else if (word === '-h') mine.push(word);
    else if (!word.startsWith('-') && agent === undefined) agent = word;
    else {
      option ??= word.startsWith('-') ? word : undefined;
      theirs.push(shellQuote(word));
    }
  }
  if (option === undefined) return undefined;
  const fixed = ['toolproof launch', agent ?? '<agent>', ...mine, '--', ...theirs, ...after.map(shellQuote)];
  return (
    `unknown option "${option}": toolproof launch takes ${[...OWN_FLAGS].join(', ')}; ` +
    `${agent ? `${agent}'s` : "the agent's"} own arguments go after --:\n  ${fixed.join(' ')}`
  );
}

/** The launcher's own options, and those that take a value. */
const OWN_FLAGS = new Set([
  '--model',
  '--url',
  '--upstream',
  '--key',
  '--api',
  '--print',
  '--write',
  '--help',
]);
const VALUED = new Set(['--model', '--url', '--upstream', '--key', '--api']);

export function parseLaunchArgs(argv: readonly string[]): LaunchOptions {
  const split = argv.indexOf('--');
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const agentArgs = split === -1 ? [] : argv.slice(split + 1);
  let parsed: ReturnType<typeof parse>;
  function parse(args: string[]) {
    return parseArgs({
      args,
      allowPositionals: true,
      options: {
        model: { type: 'string' },
        url: { type: 'string' },
        upstream: { type: 'string' },
        key: { type: 'string' },
        api: { type: 'string' },
        print: { type: 'boolean', default: false },
        write: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  }
  try {
    parsed = parse(own);
  } catch (err) {
    throw new UsageError(unknownOption(err, own, agentArgs) ?? (err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) throw new UsageError('');
  if (positionals.length === 0) throw new UsageError('name an agent');
  if (positionals.length > 1)
    throw new UsageError(`unexpected "${positionals[1]}": put the agent's own arguments after --`);
  const agent = findRecipe(positionals[0]!);
  if (!agent) {
    const near = nearestRecipe(positionals[0]!);
    throw new UsageError(
      `unknown agent "${positionals[0]}"${near ? `: did you mean ${near.id} (${near.name})?` : ''}; ` +
        `known: ${[...RECIPES, ...SDK_RECIPES].map((r) => r.id).join(', ')}`,
    );
  }
  if (values.api !== undefined && !agent.apis.includes(values.api as AgentApi))
    throw new UsageError(`${agent.id} speaks ${agent.apis.join(', ')}, not "${values.api}"`);
  if (values.print && values.write) throw new UsageError('--print and --write: pick one');
  if (agent.sdk && agentArgs.length === 0 && !values.print && !values.write)
    throw new UsageError(
      `${agent.id} is an SDK: put your program after --, e.g. toolproof launch ${agent.id} -- node app.mjs`,
    );
  // Another scheme (ftp://, ws://) waited 30 s for /health, then asked whether toolproof runs.
  for (const [flag, value] of [
    ['--upstream', values.upstream],
    ['--url', values.url],
  ] as const) {
    if (value === undefined) continue;
    let url: URL;
    try {
      url = new URL(normalizeUrl(value));
    } catch {
      throw new UsageError(`${flag}: "${value}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`${flag}: "${value}" is not an http:// or https:// URL`);
  }
  return {
    agent,
    ...(values.model ? { model: values.model } : {}),
    ...(values.url ? { url: values.url } : {}),
    ...(values.upstream ? { upstream: values.upstream } : {}),
    ...(values.key ? { key: values.key } : {}),
    ...(values.api ? { api: values.api as AgentApi } : {}),
    print: values.print === true,
    write: values.write === true,
    agentArgs,
  };
}

/**
 * The keys to try, in order: --key alone; else TOOLPROOF_API_KEY (the client's key: what Codex's
 * `--write` profile and pi read) and, for a toolproof on this machine (`local`), each of
 * TOOLPROOF_API_KEYS (the server's list, which a toolproof this command starts takes too); else a
 * placeholder (a toolproof without keys takes any). The server's list is every user's secret: it
 * is never sent one by one to another host, which could keep each key it was offered.
 */
export function candidateKeys(given: string | undefined, env: NodeJS.ProcessEnv, local = true): string[] {
  if (given) return [given];
  const keys = [env.TOOLPROOF_API_KEY ?? '', ...(local ? (env.TOOLPROOF_API_KEYS ?? '').split(',') : [])]
    .map((k) => k.trim())
    .filter(Boolean);
  return keys.length > 0 ? [...new Set(keys)] : [PLACEHOLDER_KEY];
}

/** Whether `base` names this machine (a loopback address or localhost). */
export function isLocal(base: string): boolean {
  let host: string;
  try {
    host = new URL(base).hostname;
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The first key toolproof takes, with its model list; a 401 moves on to the next. */
async function firstAccepted(
  base: string,
  keys: readonly string[],
): Promise<{ key: string; pages: unknown[] }> {
  let refused: unknown;
  for (const key of keys) {
    try {
      return { key, pages: await fetchModels(base, key) };
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 401)) throw err;
      refused = err;
    }
  }
  throw refused;
}

export const PLACEHOLDER_KEY = 'toolproof-no-key';

export interface LaunchDeps {
  /** Asks a question on the terminal; absent when stdin is not a TTY. */
  ask?: (question: string) => Promise<string>;
  /** How long a server that took the connection has to answer /health (default 30 s). */
  healthWaitMs?: number;
}

function terminalAsk(): LaunchDeps['ask'] {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  };
}

function describeModel(m: ModelInfo): string {
  return `${m.id}${m.window ? ` (window ${m.window})` : ''}`;
}

async function pickModel(
  models: ModelInfo[],
  given: string | undefined,
  io: CliIO,
  ask: LaunchDeps['ask'],
): Promise<ModelInfo> {
  if (given) {
    const found = models.find((m) => m.id === given);
    if (!found)
      io.stderr.write(
        `toolproof launch: toolproof does not list "${given}" (it lists ${models.map((m) => m.id).join(', ') || 'none'}); using it anyway\n`,
      );
    return found ?? { id: given };
  }
  if (models.length === 1) return models[0]!;
  if (models.length === 0) throw new UsageError('toolproof lists no model; name one with --model');
  const list = models.map((m, i) => `  ${i + 1}. ${describeModel(m)}`).join('\n');
  if (!ask) throw new UsageError(`toolproof serves several models; pick one with --model:\n${list}`);
  const answer = (
    await ask(`toolproof serves several models:\n${list}\nWhich one (1-${models.length})? `)
  ).trim();
  const byNumber = models[Number(answer) - 1];
  const chosen = byNumber ?? models.find((m) => m.id === answer);
  if (!chosen) throw new UsageError(`"${answer}" is none of them`);
  return chosen;
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

/** `--write`: the merged file, the old one kept beside it. Returns the backup's path (undefined: there was no file). */
export function writeWithBackup(
  path: string,
  merge: (current: string | undefined) => string,
): string | undefined {
  const current = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  const next = merge(current);
  mkdirSync(dirname(path), { recursive: true });
  let backup: string | undefined;
  if (current !== undefined) {
    backup = `${path}.toolproof-backup-${timestamp()}`;
    copyFileSync(path, backup);
  }
  writeFileSync(path, next, { mode: 0o600 });
  return backup;
}

/**
 * Where an SDK program's imports resolve from: the working directory and the folder of each file
 * argument (the command itself only when it is a script: `node` is not the program).
 */
function programDirs(args: readonly string[]): string[] {
  const dirs = [process.cwd()];
  for (const [i, arg] of args.entries()) {
    if (i === 0 && !/\.[cm]?[jt]s$/.test(arg)) continue;
    const path = resolve(arg);
    if (!arg.startsWith('-') && existsSync(path) && !dirs.includes(dirname(path))) dirs.push(dirname(path));
  }
  return dirs;
}

export async function launchCommand(
  argv: readonly string[],
  io: CliIO,
  env: NodeJS.ProcessEnv = {},
  deps: LaunchDeps = { ask: terminalAsk() },
): Promise<number> {
  let options: LaunchOptions;
  try {
    options = parseLaunchArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (!err.message) {
      io.stdout.write(LAUNCH_HELP);
      return 0;
    }
    io.stderr.write(`toolproof launch: ${err.message}\n\n${LAUNCH_HELP}`);
    return 2;
  }
  const { agent } = options;
  const say = (text: string) => io.stderr.write(`toolproof launch: ${text}\n`);

  // The binary first: nothing is started for an agent that is not there.
  if (agent.sdk) {
    const dirs = programDirs(options.agentArgs);
    if (!findPackage(agent.pkg, dirs, env)) {
      const where = `${dirs.join(', ')} (and the folders above) nor in the agents cache`;
      if (!options.print && !options.write) {
        say(
          `${agent.name} (${agent.pkg}) is not installed where your program finds it: found neither in ${where}.\n` +
            `  Install it in your project with: npm install ${agent.pkg}`,
        );
        return 127;
      }
      say(`${agent.name} is not installed here: npm install ${agent.pkg}`);
    }
  }
  // An SDK runs the user's program: its first word is the command.
  const bin = agent.bin ? findBin(agent.bin, env) : options.agentArgs[0];
  const userArgs = agent.bin ? options.agentArgs : options.agentArgs.slice(1);
  const runs = agent.bin ?? 'your program';
  if (agent.bin && !bin && !options.print && !options.write) {
    const cache = agentCacheDirs(env)[0];
    say(
      `${agent.name} (\`${agent.bin}\`) is not installed: found neither in PATH nor in ${cache ?? 'the agents cache (~/.cache/toolproof/agents)'}.\n` +
        `  Install it with: npm install -g ${agent.pkg}`,
    );
    return 127;
  }

  // --upstream: the started server's TOOLPROOF_UPSTREAM_URL (and the default is no YAML's).
  const serverEnv: NodeJS.ProcessEnv = options.upstream
    ? { ...env, TOOLPROOF_UPSTREAM_URL: options.upstream }
    : env;
  // TOOLPROOF_PORT=abc was a stack trace ("TypeError: Invalid URL").
  const port = env.TOOLPROOF_PORT;
  if (options.url === undefined && port && !(/^\d{1,5}$/.test(port) && +port >= 1 && +port <= 65535)) {
    say(
      `TOOLPROOF_PORT: "${port.slice(0, 100)}" is not a port (1 to 65535); or give toolproof's address with --url`,
    );
    return 2;
  }
  const base = normalizeUrl(options.url ?? defaultUrl(env));
  const keys = candidateKeys(options.key, env, isLocal(base));
  let server: StartedServer | undefined;
  let dir: string | undefined;
  // The launches using a toolproof on this machine (launchers.ts): the one that started it stops
  // it only when no other still runs.
  let launchers: string | undefined;
  let unregister = () => {};
  try {
    const found = await findServer(base, deps.healthWaitMs);
    if ((found === 'up' || found === 'down') && isLocal(base)) {
      launchers = launchersDir(new URL(base).port || '80', found === 'down');
      if (launchers) unregister = register(launchers);
    }
    if (typeof found === 'object') {
      say(
        `${base} answers, but not as toolproof does (${found.other}): another program holds it, a model server perhaps.\n` +
          `  Give toolproof a free port (--url http://127.0.0.1:PORT, or TOOLPROOF_PORT=PORT); a model server goes behind it: ` +
          `toolproof launch ${agent.id} --upstream ${base}/v1`,
      );
      return 1;
    }
    if (found === 'busy') {
      say(
        // A host that never answers the connection (a firewall, a wrong address) lands here too.
        `${base} gave no healthy answer to GET /health within ${Math.round((deps.healthWaitMs ?? 30_000) / 1000)} s ` +
          `(no connection, or a server that is not toolproof): is toolproof running there?`,
      );
      return 1;
    }
    if (found === 'up' && options.upstream) {
      say(
        `toolproof already runs at ${base}, with the upstream it was started with: --upstream is for a toolproof this command starts.\n` +
          `  Stop that one, or give this one a free port: --url http://127.0.0.1:PORT`,
      );
      return 1;
    }
    if (found === 'up' && (env.TOOLPROOF_UPSTREAM_URL || env.TOOLPROOF_CONFIG))
      say(
        `toolproof already runs at ${base}: it serves the upstream it was started with, whatever TOOLPROOF_UPSTREAM_URL or TOOLPROOF_CONFIG say here`,
      );
    if (found === 'down') {
      try {
        server = await startServer(
          base,
          launchers ? { ...serverEnv, [LAUNCHERS_DIR]: launchers } : serverEnv,
        );
      } catch (err) {
        // Two launches at once on a free port: the other's server took the port, and this one's
        // could not listen ("the port is already in use"): exit 1 before. It uses the other's.
        if ((await findServer(base, deps.healthWaitMs)) !== 'up') {
          say((err as Error).message);
          return 1;
        }
        say(`another launch started toolproof at ${base} meanwhile: this one uses it`);
      }
      // What it serves, as the server said: a TOOLPROOF_CONFIG that names no upstream (keys and
      // admission only) starts the simulator too, and was printed as "in front of <the file>".
      const serves = !server?.simulator
        ? ` in front of ${serverEnv.TOOLPROOF_UPSTREAM_URL ?? serverEnv.TOOLPROOF_CONFIG}`
        : serverEnv.TOOLPROOF_CONFIG
          ? ` on its BUILT-IN SIMULATOR (${serverEnv.TOOLPROOF_CONFIG} names no upstream; --upstream URL or TOOLPROOF_UPSTREAM_URL for a real model)`
          : ' on its BUILT-IN SIMULATOR (--upstream URL, TOOLPROOF_UPSTREAM_URL or TOOLPROOF_CONFIG for a real model)';
      if (server)
        say(
          `nothing answered at ${base}: started \`toolproof --serve\` there (pid ${server.pid}, log ${server.log})` +
            `${serves}; it stops when ${options.print || options.write ? 'this command' : runs} exits`,
        );
    }
    let models: ModelInfo[];
    let key: string;
    try {
      const accepted = await firstAccepted(base, keys);
      key = accepted.key;
      models = readModels(accepted.pages);
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) {
        const tried =
          options.key !== undefined
            ? 'the --key given'
            : keys[0] === PLACEHOLDER_KEY
              ? 'no key (none in --key or TOOLPROOF_API_KEY)'
              : isLocal(base)
                ? `each of the ${keys.length} key(s) of TOOLPROOF_API_KEY and TOOLPROOF_API_KEYS`
                : 'the key of TOOLPROOF_API_KEY';
        const skipped =
          options.key === undefined && !isLocal(base) && (env.TOOLPROOF_API_KEYS ?? '').trim() !== ''
            ? " (TOOLPROOF_API_KEYS, the server's own list, is tried only for a toolproof on this machine)"
            : '';
        // The named keys of a YAML are people's: never tried for them (the requests would count
        // against, and be logged as, whoever came first); said, since the launcher read that file.
        const named =
          options.key === undefined && server && serverEnv.TOOLPROOF_CONFIG
            ? ` (a key of ${serverEnv.TOOLPROOF_CONFIG}'s \`keys:\`, the one named for you)`
            : '';
        say(`toolproof at ${base} refused ${tried}${skipped}: pass --key${named} or set TOOLPROOF_API_KEY`);
        return 1;
      }
      const message = keys.reduce((text, k) => maskKey(text, k), (err as Error).message);
      say(`cannot list toolproof's models: ${message}`);
      return 1;
    }
    // A model server behind the toolproof started here that wants a key toolproof was not given:
    // vLLM keeps its model list behind its key (the launcher said "name one with --model"), and
    // llama-server lists its models without it, so the agent ran and its first request was a 401
    // it read as its own key's. Said now, before the agent runs.
    const upstream = server ? serverEnv.TOOLPROOF_UPSTREAM_URL : undefined;
    if (upstream) {
      const refusal = await upstreamRefusal(upstream, serverEnv.TOOLPROOF_UPSTREAM_API_KEY);
      if (refusal !== undefined) {
        say(
          `the model server at ${upstream} refused toolproof (HTTP ${refusal.status} to GET ${refusal.path}): it wants an API key. ` +
            `Give toolproof that key: TOOLPROOF_UPSTREAM_API_KEY=<the server's key> toolproof launch ${agent.id} --upstream ${upstream}` +
            (serverEnv.TOOLPROOF_UPSTREAM_API_KEY
              ? ' (the TOOLPROOF_UPSTREAM_API_KEY set here is not the one it takes)'
              : ''),
        );
        return 1;
      }
    }
    // A model server that does not answer: toolproof lists no model from it, so the launcher said
    // "toolproof lists no model; name one with --model", and with --model the agent ran and
    // retried its 502s for minutes. Said now, from toolproof's own /ready, before the agent runs.
    const { down, downCount, of, simulator } = await readiness(base);
    const dead =
      down.map((d) => `${d.upstream}: ${d.problem}`).join('; ') +
      (downCount > down.length ? `; and ${downCount - down.length} more` : '');
    const noModel = models.length === 0 && options.model === undefined;
    if (downCount > 0 && downCount === of && (noModel || !(options.print || options.write))) {
      say(
        `toolproof at ${base} cannot reach its model server (${dead}).\n  ` +
          (upstream
            ? `Start it, or give its address: toolproof launch ${agent.id} --upstream http://HOST:PORT/v1`
            : server
              ? 'Start it, or point toolproof at it: --upstream http://HOST:PORT/v1, TOOLPROOF_UPSTREAM_URL or TOOLPROOF_CONFIG'
              : 'Start it, or restart that toolproof with its address (TOOLPROOF_UPSTREAM_URL or TOOLPROOF_CONFIG)'),
      );
      return 1;
    }
    if (downCount > 0) say(`note: toolproof at ${base} cannot reach ${dead}; a model served there fails`);
    // The placeholder is no secret; a real key is masked in everything printed.
    const secret = key !== PLACEHOLDER_KEY || options.key !== undefined ? key : '';
    let model: ModelInfo;
    try {
      model = await pickModel(models, options.model, io, deps.ask);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      say(err.message);
      return 2;
    }
    const reserve = chooseReserve(agent, model.window, model.maxOutput);
    const maxOutput = reserve.tokens;
    // A toolproof found running on its simulator (started with no upstream, and forgotten) was
    // named only by its address: the agent then "worked" on a scripted model, said nowhere.
    const onSimulator =
      simulator && !server
        ? " (toolproof's BUILT-IN SIMULATOR, a scripted model: that toolproof was started with no upstream; TOOLPROOF_UPSTREAM_URL or TOOLPROOF_CONFIG for a real one)"
        : '';
    say(
      `${agent.name} → ${base}${onSimulator}, model ${model.id}, ` +
        (model.window
          ? `window ${model.window} tokens (${model.windowFrom}), output ${maxOutput} (${reserve.why})`
          : `window unknown (toolproof reports none): ${runs} keeps its own default; output ${maxOutput}`),
    );
    if (reserve.tooSmall) say(`warning: ${reserve.tooSmall}`);

    dir = mkdtempSync(join(tmpdir(), `toolproof-launch-${agent.id}-`));
    const target: Target = {
      base,
      model: model.id,
      ...(model.window ? { window: model.window } : {}),
      ...(model.vision !== undefined ? { vision: model.vision } : {}),
      maxOutput,
      key,
      api: options.api ?? agent.apis[0]!,
      dir,
    };
    // A run without a terminal gets the switch that lets the agent edit its folder (recipes.ts).
    const headless = agent.headless?.(userArgs);
    if (headless)
      say(
        `${agent.bin ?? agent.id} runs without a terminal: added ${headless.added} so it can edit files in this folder (give your own permission switch to choose another)`,
      );
    const plan = buildPlan(agent, target, headless?.args ?? userArgs);
    for (const line of agent.warnings?.(env, process.cwd(), target) ?? []) say(line);

    if (options.print) {
      io.stdout.write(renderPlan(plan, bin ?? agent.bin, secret));
      if (agent.bin && !bin) say(`${agent.bin} is not installed: npm install -g ${agent.pkg}`);
      return 0;
    }
    if (options.write) {
      if (!agent.write) {
        say(
          `${agent.name} takes its settings per run only: use \`toolproof launch ${agent.id}\` (or --print)`,
        );
        return 2;
      }
      const path = agent.write.path(env);
      let backup: string | undefined;
      try {
        backup = writeWithBackup(path, (current) => agent.write!.merge(current, target));
      } catch (err) {
        say(`cannot write ${path}: ${(err as Error).message}`);
        return 1;
      }
      say(
        `wrote ${path}${backup ? ` (the previous file is kept as ${backup})` : ''}; now run: ${agent.write.run}`,
      );
      return 0;
    }

    for (const [path, text] of Object.entries(plan.files)) writeFileSync(path, text, { mode: 0o600 });
    const startup = absentStartupFiles(agent.startupFiles, process.cwd());
    try {
      return await runAgent(bin!, plan.args, childEnv(plan, env), { onError: say });
    } finally {
      const removed = removeStartupFiles(startup, process.cwd());
      if (removed.length > 0)
        say(
          `removed ${removed.join(', ')}, which ${agent.name} writes into the folder it starts in (its defaults, not this run's settings)`,
        );
    }
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
    unregister();
    const others = server && launchers ? otherLaunchers(launchers) : [];
    if (server && others.length > 0) {
      server.leave();
      say(
        `toolproof --serve (pid ${server.pid}) stays up for the other launch${others.length > 1 ? 'es' : ''} using it (pid ${others.join(', ')}); it stops when the last of them exits`,
      );
    } else if (server) await server.stop();
    // Empty once this launch is out: a server this launch started stopped, or failed to start (a
    // bad setting, the port taken by another launch), when it left the folder behind in $TMPDIR.
    if (launchers && !(server && others.length > 0)) rmdirQuietly(launchers);
  }
}
