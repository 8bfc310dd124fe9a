/**
 * Every agent started by `toolproof launch` (the launcher's own env and temporary config, nothing
 * else) against toolproof in front of the scripted leaky model: the file is written, the answer
 * is clean, toolproof forced every turn. The other suite files still configure the agents by hand
 * (tests/agents/lib/agents.ts); moving them onto the launcher is the next step.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';
import { parseStat, processTable, treeOf } from '../../cli/launch/agent-process.js';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { closeApp } from '../server/stack.js';
import { HEADLESS, TOOLPROOF_CLI } from './lib/agents.js';
import { agentsInfo } from './lib/case.js';
import { SDK_PROGRAMS, sdkEnv } from './lib/sdk.js';
import { SUITE_WINDOW, startAgentStack } from './lib/stack.js';
import { describeAgents } from './lib/suite.js';
import { CORE_TASK, diskProblems } from './lib/tasks.js';

/** The launcher run to its end: its exit code and output. */
const launch = (...args: Parameters<typeof startLaunch>): Promise<{ code: number | null; out: string }> =>
  startLaunch(...args).done;

/** The launcher running (its own process group): `done` when it has exited and its output closed. */
function startLaunch(
  agent: string,
  origin: string,
  cwd: string,
  home: string,
  agentArgs: readonly string[] = HEADLESS[agent]!(CORE_TASK.prompt),
  extraEnv: NodeJS.ProcessEnv = {},
): {
  child: ChildProcess;
  exited: Promise<number | null>;
  done: Promise<{ code: number | null; out: string }>;
} {
  const bins = agentsInfo().bins as Record<string, string> | undefined;
  const binDir = bins?.claude ? dirname(bins.claude) : '';
  const env: NodeJS.ProcessEnv = {
    PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    PWD: cwd,
    TMPDIR: join(home, 'tmp'),
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    NO_COLOR: '1',
    TERM: 'dumb',
    CI: 'true',
    KILO_NO_DAEMON: '1',
    QWEN_CODE_SUPPRESS_YOLO_WARNING: '1',
    ...extraEnv,
  };
  const args = [...TOOLPROOF_CLI, 'launch', agent, '--url', origin, '--', ...agentArgs];
  const child = spawn(process.execPath, args, {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 150_000);
  // 'exit': a process the agent left running may hold the launcher's output open.
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const done = new Promise<{ code: number | null; out: string }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
  return { child, exited, done };
}

/**
 * A run without a terminal and without any permission switch of the user's own, as issue 31's
 * "done means" writes it (`toolproof launch claude -- -p "create proof.txt …"`): the launcher adds
 * the agent's switch for editing its folder (recipes.ts `headless`), so the file is written. Before,
 * Claude Code was refused the write and the model said "done" with no file.
 */
const BARE: Record<string, (task: string) => string[]> = {
  claude: (t) => ['-p', t],
  codex: (t) => ['exec', '--skip-git-repo-check', t],
  qwen: (t) => ['-p', t],
};

/**
 * The user's own configuration of each agent, as someone who uses it elsewhere keeps it (or as an
 * earlier `toolproof launch --write` for another port left it): its base URL on a port where
 * nothing listens, another model name, a key of its own, in the user's files, the project's and
 * their `.env`. Returns the files written, to check the launch left them as they were.
 */
const DEAD = 'http://127.0.0.1:9';

function userConfigs(home: string, cwd: string): Record<string, string> {
  const dead = DEAD;
  const provider = {
    model: 'mine/elsewhere',
    small_model: 'mine/elsewhere',
    permission: { edit: 'allow', bash: 'allow' },
    provider: {
      mine: {
        npm: '@ai-sdk/openai-compatible',
        options: { baseURL: `${dead}/v1`, apiKey: 'sk-user-own' },
        models: { elsewhere: { tool_call: true } },
      },
    },
  };
  const files: Record<string, string> = {
    [join(home, '.claude', 'settings.json')]: JSON.stringify({
      env: {
        ANTHROPIC_BASE_URL: dead,
        ANTHROPIC_MODEL: 'claude-elsewhere',
        ANTHROPIC_API_KEY: 'sk-user-own',
      },
    }),
    [join(cwd, '.claude', 'settings.json')]: JSON.stringify({
      env: { ANTHROPIC_BASE_URL: `${dead}/project` },
    }),
    [join(home, '.codex', 'config.toml')]: [
      'model = "gpt-elsewhere"',
      'model_provider = "mine"',
      '[model_providers.mine]',
      'name = "mine"',
      `base_url = "${dead}/v1"`,
      'wire_api = "responses"',
      'env_key = "MINE_KEY"',
      '',
    ].join('\n'),
    [join(home, '.config', 'opencode', 'opencode.json')]: JSON.stringify(provider),
    [join(cwd, 'opencode.json')]: JSON.stringify(provider),
    [join(home, '.config', 'kilo', 'kilo.json')]: JSON.stringify(provider),
    [join(cwd, 'kilo.json')]: JSON.stringify(provider),
    [join(home, '.qwen', 'settings.json')]: JSON.stringify({
      security: { auth: { selectedType: 'qwen-oauth' } },
      model: { name: 'qwen-elsewhere' },
    }),
    [join(home, '.qwen', '.env')]: `OPENAI_BASE_URL=${dead}/v1\nOPENAI_MODEL=qwen-elsewhere\n`,
    [join(home, '.pi', 'agent', 'settings.json')]: JSON.stringify({
      defaultProvider: 'toolproof',
      defaultModel: 'elsewhere',
    }),
    [join(home, '.pi', 'agent', 'models.json')]: JSON.stringify({
      providers: {
        toolproof: {
          baseUrl: `${dead}/v1`,
          api: 'openai-completions',
          apiKey: 'sk-user-own',
          models: [{ id: 'elsewhere' }],
        },
      },
    }),
    [join(home, '.continue', 'config.yaml')]: [
      'name: mine',
      'version: 1.0.0',
      'schema: v1',
      'models:',
      '  - name: elsewhere',
      '    provider: openai',
      '    model: elsewhere',
      `    apiBase: ${dead}/v1`,
      '    apiKey: sk-user-own',
      '',
    ].join('\n'),
    [join(home, '.cline', 'data', 'settings', 'providers.json')]: JSON.stringify({
      version: 1,
      lastUsedProvider: 'openai-compatible',
      modes: {},
      providers: {
        'openai-compatible': {
          settings: { provider: 'openai-compatible', apiKey: 'x', model: 'elsewhere', baseUrl: `${dead}/v1` },
          updatedAt: '2026-01-01T00:00:00.000Z',
          tokenSource: 'manual',
        },
      },
    }),
    [join(home, '.grok', 'user-settings.json')]: JSON.stringify({
      apiKey: 'sk-user-own',
      baseURL: `${dead}/v1`,
      defaultModel: 'grok-elsewhere',
    }),
    [join(cwd, '.grok', 'settings.json')]: JSON.stringify({ model: 'grok-project' }),
    [join(cwd, '.env')]: `GROK_BASE_URL=${dead}/v1\nOPENAI_BASE_URL=${dead}/v1\n`,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  return files;
}

/** A model server that lists its model and never answers a POST: the agent waits mid-request. */
async function stallingUpstream(): Promise<{ url: string; posts(): number; close(): Promise<void> }> {
  let posts = 0;
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ object: 'list', data: [{ id: 'stalled', object: 'model', owned_by: 'vllm' }] }),
      );
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(404);
      res.end();
      return;
    }
    posts++;
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    posts: () => posts,
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 200);
  } catch {
    return '';
  }
}

function isRunning(pid: number): boolean {
  try {
    return !parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.zombie;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<undefined>((r) => setTimeout(() => r(undefined), ms));

describeAgents('toolproof launch <agent>', () => {
  // Claude Code applied ~/.claude/settings.json's `env` over the launcher's variables: the run went
  // to the user's own base URL (nothing there) with their model name, and never ended.
  for (const agent of Object.keys(HEADLESS)) {
    it(`${agent}: the user's own config sends it elsewhere; the launch still reaches toolproof and leaves that config as it was`, async () => {
      const home = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-home-`));
      const cwd = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-work-`));
      mkdirSync(join(home, 'tmp'));
      const files = userConfigs(home, cwd);
      const stack = await startAgentStack({ mode: 'leak', task: CORE_TASK, cwd });
      try {
        const r = await launch(agent, stack.origin, cwd, home);
        const why = r.out.slice(-2000);
        expect(r.code, why).toBe(0);
        expect(diskProblems(CORE_TASK, cwd), why).toEqual([]);
        expect(stack.requests().length, why).toBeGreaterThan(0);
        // The agents rewrite some of them (opencode adds a $schema, Qwen Code migrates its settings):
        // what the user set is still there.
        for (const [path, text] of Object.entries(files)) {
          const kept = text.includes(DEAD) ? DEAD : /[\w-]*(elsewhere|project)/.exec(text)![0];
          expect(readFileSync(path, 'utf8'), path).toContain(kept);
        }
      } finally {
        await stack.close();
        rmSync(home, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  }

  // The Claude Agent SDK starts Claude Code itself, which loads the same files: the launcher names
  // them, and a program that passes the launch's settings file (TOOLPROOF_CLAUDE_SETTINGS) as
  // `settings` reaches toolproof whatever they say.
  it("claude-agent-sdk: the user's own Claude settings are named; with `settings` from the launch, query() still reaches toolproof", async () => {
    const bin = (agentsInfo().bins as Record<string, string> | undefined)?.['claude-agent-sdk'];
    expect(bin, 'the Claude Agent SDK in the agents cache').toBeTruthy();
    const home = mkdtempSync(join(tmpdir(), 'tp-launch-sdk-home-'));
    const cwd = mkdtempSync(join(tmpdir(), 'tp-launch-sdk-work-'));
    mkdirSync(join(home, 'tmp'));
    const files = userConfigs(home, cwd);
    const stack = await startAgentStack({ mode: 'leak', task: CORE_TASK, cwd });
    try {
      const r = await launch(
        'claude-agent-sdk',
        stack.origin,
        cwd,
        home,
        ['node', SDK_PROGRAMS['claude-agent-sdk'], '--launcher-settings', CORE_TASK.prompt],
        sdkEnv('claude-agent-sdk', bin!),
      );
      const why = r.out.slice(-2000);
      expect(r.out, why).toContain(
        `${join(home, '.claude', 'settings.json')} sets ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL in its env`,
      );
      expect(r.out, why).toContain(
        `${join(cwd, '.claude', 'settings.json')} sets ANTHROPIC_BASE_URL in its env`,
      );
      expect(r.code, why).toBe(0);
      expect(diskProblems(CORE_TASK, cwd), why).toEqual([]);
      expect(stack.requests().length, why).toBeGreaterThan(0);
      for (const path of [join(home, '.claude', 'settings.json'), join(cwd, '.claude', 'settings.json')])
        expect(readFileSync(path, 'utf8'), path).toBe(files[path]);
    } finally {
      await stack.close();
      rmSync(home, { recursive: true, force: true });
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  for (const [agent, bare] of Object.entries(BARE)) {
    it(`${agent}: proof, leak, the bare headless command (no permission switch)`, async () => {
      const home = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-home-`));
      const cwd = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-work-`));
      mkdirSync(join(home, 'tmp'));
      const stack = await startAgentStack({ mode: 'leak', task: CORE_TASK, cwd });
      try {
        const r = await launch(agent, stack.origin, cwd, home, bare(CORE_TASK.prompt));
        const why = r.out.slice(-2000);
        expect(r.code, why).toBe(0);
        expect(r.out, why).toMatch(/runs without a terminal: added --/);
        expect(diskProblems(CORE_TASK, cwd), why).toEqual([]);
      } finally {
        await stack.close();
        rmSync(home, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  }

  for (const agent of Object.keys(HEADLESS)) {
    it(`${agent}: proof, leak, through the launcher`, async () => {
      const home = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-home-`));
      const cwd = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-work-`));
      mkdirSync(join(home, 'tmp'));
      // What a user allows in their own opencode / Kilo config.
      for (const app of ['opencode', 'kilo']) {
        mkdirSync(join(home, '.config', app), { recursive: true });
        writeFileSync(
          join(home, '.config', app, `${app}.json`),
          JSON.stringify({ permission: { edit: 'allow', bash: 'allow' } }),
        );
      }
      const stack = await startAgentStack({ mode: 'leak', task: CORE_TASK, cwd });
      try {
        const r = await launch(agent, stack.origin, cwd, home);
        const why = r.out.slice(-2000);
        expect(r.code, why).toBe(0);
        expect(diskProblems(CORE_TASK, cwd), why).toEqual([]);
        expect(r.out, why).toMatch(
          new RegExp(`window ${SUITE_WINDOW} tokens \\((context_window|max_model_len)\\)`),
        );
        const forced = stack.requests().filter((l) => l.harness?.forced === true);
        expect(forced.length, why).toBeGreaterThanOrEqual(2);
        // Grok CLI writes its default project settings into the folder at start: the launcher
        // takes them back out (cli/launch/startup-files.ts), so the project holds the task's work.
        expect(existsSync(join(cwd, '.grok')), why).toBe(false);
      } finally {
        await stack.close();
        rmSync(home, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  }
  // A signal to the launcher alone, the agent mid-request (a model server that never answers):
  // the agent and every process it started end, and the launcher exits 128 + the signal's number.
  // Qwen Code 0.24.4 relaunches itself in a child and its first process exits on SIGTERM without
  // passing it on: the relaunched CLI went on running after the launcher had gone.
  const SIGNALLED: Array<[string, NodeJS.Signals]> = [
    ...Object.keys(HEADLESS).map((a): [string, NodeJS.Signals] => [a, 'SIGTERM']),
    ['qwen', 'SIGHUP'],
    // The user's program, whose query() runs the Claude Code binary of the SDK's platform package.
    ['claude-agent-sdk', 'SIGTERM'],
  ];
  for (const [agent, signal] of SIGNALLED) {
    it(`${agent}: ${signal} to the launcher mid-request ends the agent and all it started`, async () => {
      const home = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-home-`));
      const cwd = mkdtempSync(join(tmpdir(), `tp-launch-${agent}-work-`));
      mkdirSync(join(home, 'tmp'));
      const stall = await stallingUpstream();
      const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: stall.url }), { logger: false });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const sdkBin = (agentsInfo().bins as Record<string, string> | undefined)?.['claude-agent-sdk'];
      const run =
        agent === 'claude-agent-sdk'
          ? startLaunch(
              agent,
              origin,
              cwd,
              home,
              ['node', SDK_PROGRAMS['claude-agent-sdk'], CORE_TASK.prompt],
              sdkEnv('claude-agent-sdk', sdkBin!),
            )
          : startLaunch(agent, origin, cwd, home);
      let tree: number[] = [];
      try {
        await expect
          .poll(() => stall.posts(), {
            timeout: 120_000,
            interval: 250,
            message: 'the agent asked the model',
          })
          .toBeGreaterThan(0);
        // Qwen Code's own relaunch has happened by then: its last process sent the request.
        const table = processTable();
        const agentRoots = [...table]
          .filter(([pid, info]) => info.ppid === run.child.pid && !cmdline(pid).includes('esbuild'))
          .map(([pid]) => pid);
        tree = [...treeOf(agentRoots, table)];
        expect(tree.length).toBeGreaterThan(0);
        process.kill(run.child.pid!, signal);
        const code = await run.exited;
        expect(code, (await Promise.race([run.done, sleep(2000)]))?.out).toBe(
          128 + constants.signals[signal],
        );
        expect(
          tree.filter((pid) => table.get(pid) && isRunning(pid)).map((pid) => `${pid} ${cmdline(pid)}`),
        ).toEqual([]);
      } finally {
        for (const pid of [...tree, -run.child.pid!])
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        await closeApp(app);
        await stall.close();
        rmSync(home, { recursive: true, force: true });
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  }
});
