/**
 * `toolproof launch`: the window each backend kind reports reaches each agent's setting (through
 * the real toolproof app in front of the simulator), --print masks the key, a missing agent names
 * its package, --write keeps a backup, and a toolproof that is not running is started.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { GRACE_MS, parseStat, processTable } from '../../cli/launch/agent-process.js';
import { candidateKeys, isLocal, launchCommand, PLACEHOLDER_KEY } from '../../cli/launch/command.js';
import { readModels } from '../../cli/launch/models.js';
import { buildPlan } from '../../cli/launch/plan.js';
import {
  claudeWindow,
  QWEN_SESSION_ID,
  RECIPES,
  replaceTomlTables,
  tomlString,
} from '../../cli/launch/recipes.js';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { closeApp } from '../server/stack.js';
import { forwardTo } from '../support/forward.js';
import { freePort, nodeEntry, startToolproof, stopWorkers } from '../support/toolproof-process.js';

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { stdout: { write: (t: string) => out.push(t) }, stderr: { write: (t: string) => err.push(t) } },
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function toolproofOver(sim: Simulator, file?: Parameters<typeof loadConfig>[1]): Promise<string> {
  const app: ToolproofApp = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }, file), {
    logger: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => closeApp(app));
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

async function sim(options: Parameters<typeof createSimulator>[0]): Promise<Simulator> {
  const s = await createSimulator({ host: '127.0.0.1', ...options });
  cleanups.push(() => s.close());
  return s;
}

/** A fake agent binary on PATH, so the launcher finds every agent. */
function fakeBins(): { env: NodeJS.ProcessEnv; home: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tp-launch-test-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const r of RECIPES) {
    writeFileSync(join(bin, r.bin), '#!/bin/sh\nexit 0\n');
    chmodSync(join(bin, r.bin), 0o755);
  }
  const home = join(dir, 'home');
  mkdirSync(home);
  // A launcher's own temporary files (a started server's log, the launches' folder) go with the
  // test's folder: a run of this file left 11 logs and 3 folders in the machine's.
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);
  return {
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: home, TOOLPROOF_AGENTS_DIR: join(dir, 'none'), TMPDIR: tmp },
    home,
  };
}

async function printed(
  agent: string,
  url: string,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = fakeBins().env,
) {
  const o = io();
  const code = await launchCommand([agent, '--url', url, '--print', ...extra], o.io, env, {});
  return { code, out: o.out.join(''), err: o.err.join('') };
}

/** `toolproof launch pi --upstream <upstream> --print` as a process of its own (it starts toolproof on a free port). */
async function launchPiProcess(
  upstream: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const url = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(
    process.execPath,
    [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url, '--upstream', upstream, '--print'],
    { env: { ...process.env, ...fakeBins().env } },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const status = await new Promise<number | null>((r) => child.on('close', r));
  return { status, stdout, stderr };
}

/** The setting that carries the window, per agent, as --print shows it. */
const WINDOW_SETTING: Record<string, (w: number) => string> = {
  claude: (w) => `CLAUDE_CODE_MAX_CONTEXT_TOKENS=${w}`,
  codex: (w) => `model_context_window=${w}`,
  opencode: (w) => `"limit":{"context":${w}`,
  kilo: (w) => `"limit":{"context":${w}`,
  qwen: (w) => `"contextWindowSize":${w}`,
  pi: (w) => `"contextWindow":${w}`,
  cn: (w) => `contextLength: ${w}`,
  cline: (w) => `"contextWindow":${w}`,
};

describe('a run without a terminal', () => {
  it('--print shows the permission switch the launcher adds to a bare `claude -p`, and stderr says so', async () => {
    const url = await toolproofOver(
      await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 24576 }),
    );
    const task = 'create proof.txt containing 7391, then say done';
    const r = await printed('claude', url, ['--', '-p', task]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`-p '${task}' --permission-mode acceptEdits`);
    expect(r.err).toContain('runs without a terminal: added --permission-mode acceptEdits');
    // A switch of the user's own is left as it is, and nothing is added.
    const own = await printed('claude', url, ['--', '-p', task, '--permission-mode', 'plan']);
    expect(own.out).not.toContain('acceptEdits');
    expect(own.err).not.toContain('runs without a terminal');
  });
});

describe('the window from each backend kind reaches each agent', () => {
  it('vLLM max_model_len, through toolproof, into every agent that has a window setting', async () => {
    const url = await toolproofOver(
      await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 24576 }),
    );
    for (const [agent, setting] of Object.entries(WINDOW_SETTING)) {
      const r = await printed(agent, url);
      expect(r.code, r.err).toBe(0);
      expect(r.out, agent).toContain(setting(24576));
      // toolproof states the window it read from the backend (context_window); max_model_len is the fallback
      expect(r.err).toMatch(/window 24576 tokens \((context_window|max_model_len)\)/);
    }
  });

  it('llama-server n_ctx, through toolproof', async () => {
    const url = await toolproofOver(await sim({ personality: 'llama-server', modelName: 'gguf' }));
    const r = await printed('opencode', url);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('"limit":{"context":4096,"output":1024}');
    expect(r.err).toMatch(/window 4096 tokens \((context_window|meta\.n_ctx)\)/);
  });

  it("a small window: the output reserve leaves room beside the agent's own prompt, and says why; too small is said", async () => {
    // Kilo's ~12.6k-token prompt in 16k: a quarter (4,096) filled the window with it, and Kilo
    // compacted before every turn that carried a file (cli/launch/reserve.ts).
    const url = await toolproofOver(
      await sim({ personality: 'llama-server', modelName: 'gguf', nCtx: 16_384 }),
    );
    const r = await printed('kilo', url);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('"limit":{"context":16384,"output":1892}');
    expect(r.err).toContain(
      "output 1892 (half of what Kilo CLI's own prompt (~12.6k tokens) leaves of the window",
    );
    expect(r.err).not.toContain('warning:');
    const small = await printed(
      'kilo',
      await toolproofOver(await sim({ personality: 'llama-server', nCtx: 8192 })),
    );
    expect(small.code, small.err).toBe(0);
    expect(small.err).toContain(
      "warning: Kilo CLI's own prompt (~12.6k tokens) is over this 8192-token window",
    );
  });

  it('a model name from the YAML takes the window of the upstream model it maps onto', async () => {
    const s = await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 65536, checkModel: true });
    const url = await toolproofOver(s, { models: { mine: { upstream: s.url, upstreamModel: 'coder' } } });
    const r = await printed('codex', url, ['--model', 'mine']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('model="mine"');
    expect(r.out).toContain('model_context_window=65536');
    expect(r.out).toContain(`model_auto_compact_token_limit=${Math.floor(65536 * 0.85)}`);
  });

  it('what the model reads (vision) reaches pi, opencode and Qwen Code: images only for a model toolproof says sees, PDFs for every model', async () => {
    // PDFs: toolproof sends their text upstream whatever the model reads. Before, opencode's read
    // tool said "PDF read successfully" and sent nothing of it, and Qwen Code's ran pdftotext
    // (not installed: "pdftotext is not installed").
    const s = await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 32768 });
    for (const [vision, pi, opencode, qwen] of [
      [
        true,
        '"input":["text","image"]',
        '"modalities":{"input":["text","image","pdf"]',
        '"modalities":{"image":true,"pdf":true}',
      ],
      [
        false,
        '"input":["text"]',
        '"modalities":{"input":["text","pdf"]',
        '"modalities":{"image":false,"pdf":true}',
      ],
      // Not known (vLLM): Qwen Code sends an image, and toolproof answers the backend's refusal.
      [
        'auto',
        '"input":["text"]',
        '"modalities":{"input":["text","pdf"]',
        '"modalities":{"image":true,"pdf":true}',
      ],
    ] as const) {
      const url = await toolproofOver(s, { defaults: { vision } } as never);
      const list = (await (await fetch(`${url}/v1/models`)).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(list.data[0]!.input_modalities).toEqual(
        vision === 'auto' ? undefined : vision ? ['text', 'image'] : ['text'],
      );
      const p = await printed('pi', url);
      expect(p.code, p.err).toBe(0);
      expect(p.out).toContain(pi);
      const o = await printed('opencode', url);
      expect(o.code, o.err).toBe(0);
      expect(o.out).toContain(opencode);
      expect(o.out).toContain('"attachment":true');
      const q = await printed('qwen', url);
      expect(q.code, q.err).toBe(0);
      expect(q.out).toContain(qwen);
    }
    expect(readModels([{ data: [{ id: 'a', input_modalities: ['text', 'image'] }] }])[0]?.vision).toBe(true);
    expect(readModels([{ data: [{ id: 'a', input_modalities: ['text'] }] }])[0]?.vision).toBe(false);
    expect(readModels([{ data: [{ id: 'a' }] }])[0]?.vision).toBeUndefined();
  });

  it('reads an explicit context_window (toolproof YAML) and Anthropic-shaped max_input_tokens first', () => {
    expect(readModels([{ data: [{ id: 'a', context_window: 8000, max_model_len: 9000 }] }])[0]?.window).toBe(
      8000,
    );
    expect(
      readModels([{ data: [{ id: 'a' }] }, { data: [{ id: 'a', max_input_tokens: 7000 }] }])[0]?.window,
    ).toBe(7000);
    expect(readModels([{ data: [{ id: 'a', meta: { n_ctx_train: 9 } }] }])[0]?.window).toBeUndefined();
  });

  it('Claude Code: below its 100k floor, the trigger is a share of the floor', () => {
    expect(claudeWindow(32768)).toEqual({
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '32768',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '100000',
      CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: '27',
    });
    expect(claudeWindow(262144)).toEqual({
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '262144',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '262144',
    });
  });
});

describe('--print, keys, models', () => {
  it('masks the key everywhere and shows the base URL, model names and traffic switches', async () => {
    const url = await toolproofOver(await sim({ personality: 'vllm', modelName: 'coder' }));
    const key = 'sk-secret-launch-key-123456';
    const { env } = fakeBins();
    const r = await printed('claude', url, [], { ...env, TOOLPROOF_API_KEYS: `${key},other` });
    expect(r.code, r.err).toBe(0);
    expect(r.out + r.err).not.toContain(key);
    expect(r.out).toContain('ANTHROPIC_AUTH_TOKEN=sk-s…****');
    expect(r.out).toContain(`ANTHROPIC_BASE_URL=${url}`);
    expect(r.out).toContain('ANTHROPIC_DEFAULT_HAIKU_MODEL=coder');
    expect(r.out).toContain('CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1');
    expect(r.out).toContain('unset ANTHROPIC_API_KEY');
    // The same variables in a --settings file, above the `env` of the user's settings files,
    // which Claude Code applies over its environment; their own Anthropic key there emptied.
    expect(r.out).toMatch(/claude --settings \S+\/claude-settings\.json/);
    const settings = /# temporary file \S+\/claude-settings\.json.*\n# {3}(.*)/.exec(r.out)?.[1];
    const given = JSON.parse(settings ?? '{}').env;
    expect(given).toMatchObject({ ANTHROPIC_BASE_URL: url, ANTHROPIC_MODEL: 'coder', ANTHROPIC_API_KEY: '' });
    expect(given.ANTHROPIC_AUTH_TOKEN).toBe('sk-s…****');
    // The file the command names is not there after --print, and the output says so.
    const path = /# temporary file (\S+\/claude-settings\.json) \(not written by --print/.exec(r.out)?.[1];
    expect(path, r.out).toBeTruthy();
    expect(existsSync(path!)).toBe(false);
  });

  it('takes TOOLPROOF_API_KEY, else the first of TOOLPROOF_API_KEYS toolproof accepts; names what it tried when none is', async () => {
    const s = await sim({ personality: 'vllm', modelName: 'coder' });
    const right = 'sk-right-launch-key-0001';
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: s.url, TOOLPROOF_API_KEYS: right }), {
      logger: false,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => closeApp(app));
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const { env } = fakeBins();
    // The client's own variable (what Codex's --write profile and pi read): it was ignored, so a 401.
    const own = await printed('codex', url, [], { ...env, TOOLPROOF_API_KEY: right });
    expect(own.code, own.err).toBe(0);
    expect(own.out).toContain('TOOLPROOF_API_KEY=sk-r…****');
    // A list whose first key this toolproof does not take: the next one is tried.
    const list = await printed('claude', url, [], {
      ...env,
      TOOLPROOF_API_KEYS: `sk-other-launch-key-999, ${right}`,
    });
    expect(list.code, list.err).toBe(0);
    expect(list.out + list.err).not.toContain(right);
    expect(list.out).toContain('ANTHROPIC_AUTH_TOKEN=sk-r…****');
    const none = await printed('claude', url, [], env);
    expect(none.code).toBe(1);
    expect(none.err).toContain('refused no key (none in --key or TOOLPROOF_API_KEY)');
    const wrong = await printed('claude', url, ['--key', 'sk-other-launch-key-999'], {
      ...env,
      TOOLPROOF_API_KEY: right,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain('refused the --key given');
  });

  it("the server's key list (TOOLPROOF_API_KEYS) is offered only to a toolproof on this machine, never one by one to another host", () => {
    const env = {
      TOOLPROOF_API_KEY: 'sk-mine-000000000001',
      TOOLPROOF_API_KEYS: 'sk-alice-00000001,sk-bob-000000002',
    };
    expect(candidateKeys(undefined, env, true)).toEqual([
      'sk-mine-000000000001',
      'sk-alice-00000001',
      'sk-bob-000000002',
    ]);
    expect(candidateKeys(undefined, env, false)).toEqual(['sk-mine-000000000001']);
    expect(candidateKeys(undefined, { TOOLPROOF_API_KEYS: 'sk-alice-00000001' }, false)).toEqual([
      PLACEHOLDER_KEY,
    ]);
    expect(candidateKeys('sk-given-0000000001', env, false)).toEqual(['sk-given-0000000001']);
    for (const local of [
      'http://127.0.0.1:8787',
      'http://localhost:8787',
      'http://[::1]:8787',
      'http://127.3.0.9:1',
    ])
      expect(isLocal(local), local).toBe(true);
    for (const remote of [
      'http://gpu-box:8787',
      'http://10.0.0.5:8787',
      'https://toolproof.example.com',
      'http://127.0.0.1.nip.io:80',
      'not a url',
    ])
      expect(isLocal(remote), remote).toBe(false);
  });

  it('several models and no TTY: exits 2 with the list', async () => {
    const s = await sim({ personality: 'vllm', modelName: 'coder' });
    const url = await toolproofOver(s, { models: { other: { upstream: s.url, upstreamModel: 'coder' } } });
    const r = await printed('claude', url);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/several models.*\n.*1\. /);
  });

  it('several models on a TTY: asks', async () => {
    const s = await sim({ personality: 'vllm', modelName: 'coder' });
    const url = await toolproofOver(s, { models: { other: { upstream: s.url, upstreamModel: 'coder' } } });
    const o = io();
    const code = await launchCommand(['qwen', '--url', url, '--print'], o.io, fakeBins().env, {
      ask: async () => 'other',
    });
    expect(code).toBe(0);
    expect(o.out.join('')).toContain('OPENAI_MODEL=other');
  });
});

describe('a missing agent', () => {
  it('names the npm package and starts nothing', async () => {
    const o = io();
    const code = await launchCommand(
      ['claude', '--url', 'http://127.0.0.1:9'],
      o.io,
      { PATH: '/nonexistent', HOME: '/nonexistent', TOOLPROOF_AGENTS_DIR: '/nonexistent' },
      {},
    );
    expect(code).toBe(127);
    expect(o.err.join('')).toContain('npm install -g @anthropic-ai/claude-code');
  });
});

describe('an unknown agent', () => {
  it('names the nearest one (a typo, a product or package name) and exits 2; a name near none lists them', async () => {
    for (const [given, near] of [
      ['claud', 'claude (Claude Code)'],
      ['claude-code', 'claude (Claude Code)'],
      ['continue', 'cn (Continue CLI)'],
      ['kilocode', 'kilo (Kilo CLI)'],
      ['clien', 'cline (Cline CLI)'],
      ['qwen-code', 'qwen (Qwen Code)'],
      ['openai-agents-sdk', 'openai-agents (OpenAI Agents SDK)'],
      // The product's own name, and the npm package whole (before: no suggestion for either).
      ['codex-cli', 'codex (Codex)'],
      ['openai-codex', 'codex (Codex)'],
      ['@openai/codex', 'codex (Codex)'],
    ]) {
      const o = io();
      expect(await launchCommand([given!], o.io, {}, {})).toBe(2);
      expect(o.err.join(''), given).toContain(`unknown agent "${given}": did you mean ${near}?`);
    }
    const o = io();
    expect(await launchCommand(['aider'], o.io, {}, {})).toBe(2);
    expect(o.err.join('')).not.toContain('did you mean');
    expect(o.err.join('')).toContain('known: claude, codex, opencode, qwen, pi, cn, kilo, cline, grok');
  });
});

describe("toolproof's address", () => {
  it('a TOOLPROOF_PORT that is not a port, and a URL of another scheme, are said at once (exit 2)', async () => {
    // Before: TOOLPROOF_PORT=abc was "TypeError: Invalid URL" and its stack; --url ftp://… waited
    // 30 s for /health, then asked whether toolproof was running.
    const { env } = fakeBins();
    for (const port of ['abc', '99999', '0', '80 ']) {
      const o = io();
      expect(await launchCommand(['claude', '--print'], o.io, { ...env, TOOLPROOF_PORT: port }, {})).toBe(2);
      expect(o.err.join('')).toContain(`TOOLPROOF_PORT: "${port}" is not a port (1 to 65535)`);
    }
    for (const flag of ['--url', '--upstream']) {
      const o = io();
      expect(
        await launchCommand(['claude', flag, 'ftp://127.0.0.1:9', '--print'], o.io, env, {
          healthWaitMs: 500,
        }),
      ).toBe(2);
      expect(o.err.join('')).toContain(`${flag}: "ftp://127.0.0.1:9" is not an http:// or https:// URL`);
    }
  });
});

describe('an option the launcher does not take', () => {
  // `toolproof launch claude -p "task"` (the `--` forgotten) printed Node's own "To specify a
  // positional argument starting with a '-', place it at the end of the command after '--', as in
  // '-- "-p"': neither the agent nor the command to type.
  it("names the launcher's options and the command with the agent's arguments after --; a key given is not shown", async () => {
    const o = io();
    expect(await launchCommand(['claude', '-p', 'fix the test'], o.io, {}, {})).toBe(2);
    const err = o.err.join('');
    expect(err).toContain(
      `unknown option "-p": toolproof launch takes --model, --url, --upstream, --key, --api, --print, --write, --help; claude's own arguments go after --:\n  toolproof launch claude -- -p 'fix the test'\n`,
    );
    expect(err).not.toContain('positional argument');
    const k = io();
    const key = 'sk-secret-launch-key-0123456789';
    expect(
      await launchCommand(['codex', '--key', key, '--model', 'coder', 'exec', '--json', 'go'], k.io, {}, {}),
    ).toBe(2);
    expect(k.err.join('')).toContain(
      "codex's own arguments go after --:\n  toolproof launch codex --key <key> --model coder -- exec --json go\n",
    );
    expect(k.err.join('')).not.toContain(key);
  });
});

describe('--write', () => {
  it('merges into the agent config and keeps the old file as a backup', async () => {
    const url = await toolproofOver(await sim({ personality: 'vllm', modelName: 'coder' }));
    const { env, home } = fakeBins();
    const path = join(home, '.claude', 'settings.json');
    mkdirSync(join(home, '.claude'));
    writeFileSync(path, JSON.stringify({ theme: 'dark', env: { KEEP: '1' } }));
    const o = io();
    expect(await launchCommand(['claude', '--url', url, '--write'], o.io, env, {})).toBe(0);
    const written = JSON.parse(readFileSync(path, 'utf8'));
    expect(written.theme).toBe('dark');
    expect(written.env.KEEP).toBe('1');
    expect(written.env.ANTHROPIC_BASE_URL).toBe(url);
    const backups = readdirSync(join(home, '.claude')).filter((f) => f.includes('toolproof-backup'));
    expect(backups).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(home, '.claude', backups[0]!), 'utf8'))).toEqual({
      theme: 'dark',
      env: { KEEP: '1' },
    });
  });

  it("Codex: replaces toolproof's own TOML tables and keeps the rest", () => {
    const before = 'model = "x"\n\n[profiles.toolproof]\nmodel = "old"\n\n[mcp_servers.a]\ncommand = "a"\n';
    const after = replaceTomlTables(before, ['profiles.toolproof'], '[profiles.toolproof]\nmodel = "new"\n');
    expect(after).toBe(
      'model = "x"\n\n[mcp_servers.a]\ncommand = "a"\n\n[profiles.toolproof]\nmodel = "new"\n',
    );
  });
});

describe('a toolproof that is not running', () => {
  // It says it serves over its channel to the launcher: with two workers, once both listen.
  it.each([
    ['one process', {}],
    ['two workers', { TOOLPROOF_WORKERS: '2' }],
  ])(
    'is started with --serve on the given port (%s), answers, and is stopped afterwards',
    async (_, workers) => {
      const { env } = fakeBins();
      // A port the kernel just handed out and took back: free. (The sim's port + 1, used before, can
      // be another test's: a CI run saw the started server exit 1, its reason lost in a log.)
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const run = spawnSync(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url, '--print'],
        {
          encoding: 'utf8',
          env: { ...process.env, ...env, ...workers, PATH: `${env.PATH}` },
          timeout: 90_000,
        },
      );
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toContain(`nothing answered at ${url}: started \`toolproof --serve\``);
      expect(run.stderr).toContain('BUILT-IN SIMULATOR');
      expect(run.stdout).toContain('--provider toolproof --model');
      // Stopped once the command ended.
      const after = await fetch(`${url}/health`).then(
        () => 'up',
        () => 'down',
      );
      expect(after).toBe('down');
    },
    120_000,
  );
});

describe('a toolproof already running on its simulator', () => {
  // `npm start` in one terminal, forgotten, no upstream set: a launch in another found it and
  // said only its address and "model simulated-model", and the agent worked on the scripted model.
  it('the launch says so on its first line; a toolproof with an upstream is not called one', async () => {
    const { env } = fakeBins();
    const port = await freePort();
    const proc = startToolproof({ TOOLPROOF_PORT: String(port) });
    cleanups.push(async () => {
      await stopWorkers(proc);
    });
    await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening'), 60_000);
    // Not spawnSync: the second toolproof answers from this process.
    const run = async (url: string) => {
      const child = spawn(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', 'opencode', '--url', url],
        {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const status = await new Promise<number | null>((r) => child.on('close', r));
      return { status, stderr };
    };
    const found = await run(`http://127.0.0.1:${port}`);
    expect(found.status, found.stderr).toBe(0);
    expect(found.stderr).not.toContain('nothing answered');
    expect(found.stderr).toMatch(
      new RegExp(
        `opencode → http://127\\.0\\.0\\.1:${port} \\(toolproof's BUILT-IN SIMULATOR, a scripted model`,
      ),
    );
    const real = await run(await toolproofOver(await sim({ personality: 'vllm' })));
    expect(real.status, real.stderr).toBe(0);
    expect(real.stderr).toContain('opencode → http://127.0.0.1:');
    expect(real.stderr).not.toContain('SIMULATOR');
  }, 120_000);
});

describe('a TOOLPROOF_CONFIG that names no upstream', () => {
  // A team's YAML with keys and admission but no upstream yet: the server it starts serves the
  // built-in simulator, and the launcher said "in front of <the file>", as if a model were behind it.
  it('says the started toolproof runs on its built-in simulator, and why; without --key, where its named keys are', async () => {
    const { env } = fakeBins();
    const dir = mkdtempSync(join(tmpdir(), 'tp-launch-yaml-'));
    const file = join(dir, 'toolproof.yaml');
    writeFileSync(
      file,
      'admission:\n  concurrency: 2\nkeys:\n  - name: alice\n    key: sk-alice-launch-yaml-0001\n',
    );
    const url = `http://127.0.0.1:${await freePort()}`;
    try {
      const run = spawnSync(
        process.execPath,
        [
          ...nodeEntry('cli/toolproof.ts'),
          'launch',
          'pi',
          '--url',
          url,
          '--key',
          'sk-alice-launch-yaml-0001',
          '--print',
        ],
        { encoding: 'utf8', env: { ...process.env, ...env, TOOLPROOF_CONFIG: file }, timeout: 90_000 },
      );
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toContain(
        `on its BUILT-IN SIMULATOR (${file} names no upstream; --upstream URL or TOOLPROOF_UPSTREAM_URL for a real model)`,
      );
      expect(run.stderr).not.toContain('in front of');
      // Without --key: its named keys are never tried for the user, and the message says where they are.
      const keyless = spawnSync(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url, '--print'],
        { encoding: 'utf8', env: { ...process.env, ...env, TOOLPROOF_CONFIG: file }, timeout: 90_000 },
      );
      expect(keyless.status).toBe(1);
      expect(keyless.stderr).toContain(`pass --key (a key of ${file}'s \`keys:\`, the one named for you)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('a launcher that is gone', () => {
  // The server it started is stopped by the launcher when the agent exits. A launcher killed
  // outright, or ended by a signal while the server was still coming up (before any handler),
  // left `toolproof --serve` holding the port for good. It now stops when its channel to the
  // launcher closes (cli/main.ts).
  it('takes the toolproof --serve it started with it, even killed outright', async () => {
    const { env } = fakeBins();
    const bin = env.PATH!.split(':')[0]!;
    const started = join(dirname(bin), 'agent-started');
    writeFileSync(join(bin, 'pi'), `#!/bin/sh\ntouch '${started}'\nexec sleep 60\n`);
    const url = `http://127.0.0.1:${await freePort()}`;
    // Killed outright, the launcher leaves its folder (the agent's settings) behind: in the
    // test's own temporary folder, removed with it, not one more in the machine's per run.
    const tmp = env.TMPDIR!;
    const launcher = spawn(
      process.execPath,
      [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url],
      {
        env: { ...process.env, ...env },
        stdio: 'ignore',
        detached: true,
      },
    );
    // The whole group at the end: the agent, and the server were it left behind.
    cleanups.push(() => {
      try {
        process.kill(-launcher.pid!, 'SIGKILL');
      } catch {}
    });
    const health = () =>
      fetch(`${url}/health`).then(
        () => 'up',
        () => 'down',
      );
    await expect.poll(() => existsSync(started), { timeout: 60_000, interval: 200 }).toBe(true);
    expect(await health()).toBe('up');
    process.kill(launcher.pid!, 'SIGKILL');
    await expect.poll(health, { timeout: 15_000, interval: 250 }).toBe('down');
    expect(readdirSync(tmp).filter((f) => f.startsWith('toolproof-launch-pi-'))).toHaveLength(1);
  }, 90_000);
});

describe('two launches on one port', () => {
  // Two agents in two terminals: the first launch started the server, the second found it. When
  // the first agent exited, its launcher stopped the server under the second, whose next request
  // found nothing there ("Failed to connect").
  it('the server the first started stays up while the second runs, and stops after it', async () => {
    const { env } = fakeBins();
    const bin = env.PATH!.split(':')[0]!;
    const at = (name: string) => join(dirname(bin), name);
    const url = `http://127.0.0.1:${await freePort()}`;
    const waitFor = (name: string) =>
      `touch '${at(`${name}-started`)}'\nwhile [ ! -e '${at(`${name}-go`)}' ]; do sleep 0.1; done\n`;
    writeFileSync(join(bin, 'pi'), `#!/bin/sh\n${waitFor('a')}exit 0\n`);
    // The second agent's next request, once the first has exited.
    const check = `fetch('${url}/health').then((r) => process.exit(r.ok ? 0 : 3), () => process.exit(3))`;
    writeFileSync(
      join(bin, 'opencode'),
      `#!/bin/sh\n${waitFor('b')}exec '${process.execPath}' -e "${check}"\n`,
    );
    const launch = (agent: string) => {
      const child = spawn(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', agent, '--url', url],
        {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
          detached: true,
        },
      );
      cleanups.push(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {}
      });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((r) => child.on('close', r));
      return { exited, stderr: () => stderr };
    };
    const health = () =>
      fetch(`${url}/health`).then(
        (r) => (r.ok ? 'up' : 'down'),
        () => 'down',
      );
    const a = launch('pi');
    await expect.poll(() => existsSync(at('a-started')), { timeout: 60_000, interval: 200 }).toBe(true);
    const b = launch('opencode');
    await expect.poll(() => existsSync(at('b-started')), { timeout: 60_000, interval: 200 }).toBe(true);
    expect(b.stderr()).not.toContain('started `toolproof --serve`');
    writeFileSync(at('a-go'), '');
    expect(await a.exited, a.stderr()).toBe(0);
    expect(await health()).toBe('up');
    expect(a.stderr()).toContain('stays up for the other launch using it');
    writeFileSync(at('b-go'), '');
    expect(await b.exited, b.stderr()).toBe(0);
    // ...and stops once the last launch using it is gone, their folder with it.
    await expect.poll(health, { timeout: 15_000, interval: 250 }).toBe('down');
    const launchers = join(env.TMPDIR!, `toolproof-${new URL(url).port}.launchers`);
    await expect.poll(() => existsSync(launchers), { timeout: 5_000, interval: 100 }).toBe(false);
  }, 120_000);
});

describe('two launches at once on a free port', () => {
  // Both found nothing there and started a server; the second's could not listen ("the port is
  // already in use") and its launch exited 1. Here the other launch's toolproof takes the port
  // while this one's server loads, and answers /health once this one's has given up, or at once:
  // then this launch said it had started the server there (its own server's pid, a process that
  // exited a moment later) and, at its end, that this pid stayed up for the other launch.
  it.each([
    ['once this one gave up', true],
    ['while this one still loads', false],
  ])(
    "the launch whose server could not listen uses the other's (it answers /health %s)",
    async (_, late) => {
      const { env } = fakeBins();
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const log = join(env.TMPDIR!, `toolproof-${port}.log`);
      const launcher = spawn(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url],
        {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
          detached: true,
        },
      );
      cleanups.push(() => {
        try {
          process.kill(-launcher.pid!, 'SIGKILL');
        } catch {}
      });
      let stderr = '';
      launcher.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((r) => launcher.on('close', r));
      // The launcher opens its server's log right before starting it.
      await expect.poll(() => existsSync(log), { timeout: 60_000, interval: 20 }).toBe(true);
      // ...and is gone: the launcher reaped it (its pid no longer in /proc).
      const child = () => [...processTable()].find(([, info]) => info.ppid === launcher.pid)?.[0];
      await expect.poll(child, { timeout: 10_000, interval: 20 }).toBeDefined();
      const serve = child();
      const gaveUp = () =>
        readFileSync(log, 'utf8').includes('already in use') && !existsSync(`/proc/${serve}`);
      const other = createServer(async (req, res) => {
        if (req.url === '/health' && late) while (!gaveUp()) await new Promise((r) => setTimeout(r, 50));
        res.setHeader('content-type', 'application/json');
        res.end(
          req.url?.startsWith('/v1/models') ? '{"object":"list","data":[{"id":"coder"}]}' : '{"status":"ok"}',
        );
      });
      await new Promise<void>((r) => other.listen(port, '127.0.0.1', r));
      cleanups.push(() => new Promise<void>((r) => other.close(() => r())));
      expect(await exited, stderr).toBe(0);
      expect(stderr).toContain(`another launch started toolproof at ${url} meanwhile: this one uses it`);
      expect(stderr).not.toContain('started `toolproof --serve`');
      expect(stderr).not.toContain('stays up');
    },
    120_000,
  );
});

/** Whether `pid` runs (a zombie has ended: only its parent's wait is missing). */
function running(pid: number): boolean {
  try {
    return !parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.zombie;
  } catch {
    return false;
  }
}

describe('a signal to the launcher alone', () => {
  // Qwen Code 0.24.4 relaunches itself in a child, and its first process exits on SIGTERM without
  // passing it on: `kill <launcher>` ended the launcher (status 0, the first process's) and left
  // the relaunched CLI running, with whatever it had started. The fake agent below does what it
  // does, and its child has started a command in a group of its own that ignores SIGTERM.
  it.runIf(existsSync('/proc/self/stat'))(
    'ends the agent and every process it started (SIGKILL after the grace period), then exits 143',
    async () => {
      const url = await toolproofOver(await sim({ personality: 'vllm', modelName: 'coder' }));
      const { env } = fakeBins();
      const bin = env.PATH!.split(':')[0]!;
      const pids = join(dirname(bin), 'pids.json');
      writeFileSync(
        join(bin, 'qwen'),
        `#!${process.execPath}
const { spawn } = require('node:child_process');
const role = process.argv.at(-1);
const idle = () => setInterval(() => {}, 1000);
if (role !== 'relaunched' && role !== 'stubborn') {
  spawn(process.execPath, [__filename, 'relaunched'], { stdio: 'inherit' });
  process.on('SIGTERM', () => process.exit(0));
  idle();
} else if (role === 'relaunched') {
  const env = { ...process.env, FIRST: String(process.ppid) };
  spawn(process.execPath, [__filename, 'stubborn'], { stdio: 'ignore', detached: true, env });
  idle();
} else {
  process.on('SIGTERM', () => {});
  const all = [Number(process.env.FIRST), process.ppid, process.pid];
  require('node:fs').writeFileSync(${JSON.stringify(pids)}, JSON.stringify(all));
  idle();
}
`,
      );
      const launcher = spawn(
        process.execPath,
        [...nodeEntry('cli/toolproof.ts'), 'launch', 'qwen', '--url', url, '--model', 'coder'],
        { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
      );
      let stderr = '';
      launcher.stderr.on('data', (d) => (stderr += d));
      // 'exit', not 'close': a process left running holds the launcher's stderr open.
      const exited = new Promise<number | null>((r) => launcher.on('exit', r));
      let started: number[] = [];
      cleanups.push(() => {
        for (const pid of [...started, -launcher.pid!])
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
      });
      await expect
        .poll(() => existsSync(pids) && readFileSync(pids, 'utf8').endsWith(']'), {
          timeout: 60_000,
          interval: 200,
        })
        .toBe(true);
      started = JSON.parse(readFileSync(pids, 'utf8')) as number[];
      expect(started.every(running), stderr).toBe(true);
      const sent = Date.now();
      process.kill(launcher.pid!, 'SIGTERM');
      expect(await exited, stderr).toBe(143);
      // Not before the grace period: the stubborn command was given it.
      expect(Date.now() - sent).toBeGreaterThanOrEqual(GRACE_MS - 500);
      expect(started.filter(running), stderr).toEqual([]);
    },
    90_000,
  );
});

describe("a terminal's Ctrl-C", () => {
  // A terminal sends Ctrl-C to its whole foreground process group. An interactive agent takes it
  // as "stop this turn" and goes on; the toolproof the launcher started, in the same group, shut
  // down, and the agent's next turn found nothing at its URL (seen in a pty: one Ctrl-C in the
  // fake agent below, then "toolproof GONE"). The server now has a group of its own.
  it('stops the turn of an agent that goes on, not the toolproof --serve the launcher started', async () => {
    const { env } = fakeBins();
    const bin = env.PATH!.split(':')[0]!;
    const started = join(dirname(bin), 'agent-started');
    const url = `http://127.0.0.1:${await freePort()}`;
    const check = `fetch('${url}/health').then((r) => process.exit(r.ok ? 0 : 3), () => process.exit(3))`;
    // Waits for its Ctrl-C, then asks toolproof as its next turn would; exits 3 when it is gone.
    writeFileSync(
      join(bin, 'pi'),
      `#!/bin/sh\ntrap 'got=1' INT\ngot=0\ntouch '${started}'\n` +
        `while [ $got = 0 ]; do sleep 0.1; done\nsleep 1\nexec '${process.execPath}' -e "${check}"\n`,
    );
    const launcher = spawn(
      process.execPath,
      [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url],
      // Its own group, as a terminal's foreground job.
      { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    let stderr = '';
    launcher.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => launcher.on('close', r));
    cleanups.push(() => {
      try {
        process.kill(-launcher.pid!, 'SIGKILL');
      } catch {}
    });
    await expect.poll(() => existsSync(started), { timeout: 60_000, interval: 200 }).toBe(true);
    process.kill(-launcher.pid!, 'SIGINT');
    // The agent's own exit status is the launcher's: 0, toolproof still answered its next turn.
    expect(await exited, stderr).toBe(0);
    // ...and the launcher stopped the server once the agent was done.
    const after = await fetch(`${url}/health`).then(
      () => 'up',
      () => 'down',
    );
    expect(after).toBe('down');
  }, 90_000);
});

describe('--upstream', () => {
  it('the model server behind the toolproof it starts: its model and window reach the agent', async () => {
    const s = await sim({ personality: 'vllm', modelName: 'behind', maxModelLen: 20480 });
    const url = `http://127.0.0.1:${await freePort()}`;
    // Not spawnSync: the simulator answers from this process.
    const child = spawn(
      process.execPath,
      [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url, '--upstream', s.url, '--print'],
      { env: { ...process.env, ...fakeBins().env } },
    );
    const run = { stdout: '', stderr: '', status: null as number | null };
    child.stdout.on('data', (d) => (run.stdout += d));
    child.stderr.on('data', (d) => (run.stderr += d));
    run.status = await new Promise<number | null>((r) => child.on('close', r));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toContain(`started \`toolproof --serve\` there`);
    expect(run.stderr).toContain(`in front of ${s.url}`);
    expect(run.stdout).toContain('--model behind');
    expect(run.stdout).toContain('"contextWindow":20480');
  }, 120_000);

  it('a model server that wants a key toolproof was not given (vLLM --api-key) is named, with TOOLPROOF_UPSTREAM_API_KEY', async () => {
    // Before: "toolproof lists no model; name one with --model" (vLLM keeps its list behind its
    // key), and with --model every request of the agent was a 401 it read as its own key's.
    const s = await sim({ personality: 'vllm', modelName: 'behind', apiKey: 'sk-backend-only-0123456789' });
    const { status, stderr } = await launchPiProcess(s.url);
    expect(status, stderr).toBe(1);
    expect(stderr).toContain(
      `the model server at ${s.url} refused toolproof (HTTP 401 to GET /v1/models): it wants an API key. ` +
        `Give toolproof that key: TOOLPROOF_UPSTREAM_API_KEY=<the server's key> toolproof launch pi --upstream ${s.url}`,
    );
    expect(stderr).not.toContain('name one with --model');
  }, 120_000);

  it("llama-server started with --api-key (its model list open, /props not): said at once, by the launcher and in the started server's log", async () => {
    // Before: llama-server lists its models without the key, so the agent ran and its first
    // request was a 401 it read as its own key's; the server's start-up probe said nothing.
    const s = await sim({
      personality: 'llama-server',
      modelName: 'behind',
      apiKey: 'sk-llama-only-0123456789',
    });
    const { status, stdout, stderr } = await launchPiProcess(s.url);
    expect(status, stderr).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(
      `the model server at ${s.url} refused toolproof (HTTP 401 to GET /props): it wants an API key. ` +
        `Give toolproof that key: TOOLPROOF_UPSTREAM_API_KEY=<the server's key> toolproof launch pi --upstream ${s.url}`,
    );
    const log = /log (\S+)\)/.exec(stderr)?.[1];
    expect(log, stderr).toBeTruthy();
    const origin = new URL(s.url).origin;
    expect(readFileSync(log!, 'utf8')).toContain(
      `toolproof: the upstream at ${origin} wants an API key (HTTP 401 to GET /props without one: llama-server or vLLM started with --api-key)`,
    );
  }, 120_000);

  it('a model server that does not answer is named, with what went wrong, and nothing runs', async () => {
    // Before: "toolproof lists no model; name one with --model", and with --model the agent ran
    // and retried toolproof's 502s for minutes (Claude Code: 10 tries, backing off).
    const dead = `http://127.0.0.1:${await freePort()}/v1`;
    const { status, stdout, stderr } = await launchPiProcess(dead);
    expect(status, stderr).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(
      `cannot reach its model server (${dead}: The upstream ${dead} is unreachable (ECONNREFUSED).)`,
    );
    expect(stderr).toContain('toolproof launch pi --upstream http://HOST:PORT/v1');
    expect(stderr).not.toContain('name one with --model');

    // A toolproof already running in front of it: the same, --model given or not; no agent runs.
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: dead }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => closeApp(app));
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const { env } = fakeBins();
    const bin = env.PATH!.split(':')[0]!;
    const ran = join(dirname(bin), 'agent-ran');
    writeFileSync(join(bin, 'pi'), `#!/bin/sh\ntouch '${ran}'\n`);
    for (const extra of [[], ['--model', 'coder']]) {
      const o = io();
      expect(await launchCommand(['pi', '--url', url, ...extra], o.io, env, {})).toBe(1);
      expect(o.err.join('')).toContain(`toolproof at ${url} cannot reach its model server (${dead}: `);
      expect(o.err.join('')).toContain('restart that toolproof with its address');
    }
    expect(existsSync(ran)).toBe(false);
    // --print with a model still prints what would be set, with a note.
    const noted = await printed('pi', url, ['--model', 'coder'], env);
    expect(noted.code, noted.err).toBe(0);
    expect(noted.err).toContain(`note: toolproof at ${url} cannot reach ${dead}: `);
  }, 120_000);

  it('is refused when toolproof already runs there (it has its own upstream); TOOLPROOF_UPSTREAM_URL is a note', async () => {
    const url = await toolproofOver(await sim({ personality: 'vllm', modelName: 'coder' }));
    const { env } = fakeBins();
    const o = io();
    const code = await launchCommand(
      ['pi', '--url', url, '--upstream', 'http://gpu:8000/v1', '--print'],
      o.io,
      env,
      {},
    );
    expect(code).toBe(1);
    expect(o.err.join('')).toContain(
      `toolproof already runs at ${url}, with the upstream it was started with`,
    );
    const noted = await printed('pi', url, [], { ...env, TOOLPROOF_UPSTREAM_URL: 'http://gpu:8000/v1' });
    expect(noted.code).toBe(0);
    expect(noted.err).toContain(
      `toolproof already runs at ${url}: it serves the upstream it was started with`,
    );
  });
});

describe('a toolproof --serve that cannot start', () => {
  it("says why, from the server's own last words, not only where its log is", async () => {
    const { env } = fakeBins();
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = spawnSync(
      process.execPath,
      [...nodeEntry('cli/toolproof.ts'), 'launch', 'pi', '--url', url, '--print'],
      {
        encoding: 'utf8',
        env: { ...process.env, ...env, TOOLPROOF_UPSTREAM_URL: 'not a url' },
        timeout: 90_000,
      },
    );
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(
      /toolproof --serve exited 2: toolproof: TOOLPROOF_UPSTREAM_URL: "not a url" is not a URL/,
    );
    expect(run.stderr).toContain('; see ');
    // The launches' folder it made for that server is gone with it.
    expect(readdirSync(env.TMPDIR!).filter((f) => f.endsWith('.launchers'))).toEqual([]);
  }, 120_000);
});

describe('a toolproof too loaded to answer /health at once', () => {
  // Seen in the agent suite on a 2-core box at load 15: /health took over 1.5 s, the launcher took
  // "no answer" for "nothing there", started `toolproof --serve` on the port toolproof held, and
  // that exited 1 (address in use). A server that took the connection is waited for instead.
  it('is waited for, not replaced by a second server on its port', async () => {
    const { env } = fakeBins();
    const target = await toolproofOver(await sim({ personality: 'vllm', modelName: 'small-coder' }));
    let healthChecks = 0;
    const forward = forwardTo(target);
    const slow = createServer((req, res) => {
      if (req.url === '/health' && healthChecks++ === 0) setTimeout(() => forward(req, res), 2_500);
      else forward(req, res);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => slow.close(() => r())));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
    const r = await printed('pi', url, [], env);
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toContain('started `toolproof --serve`');
    expect(r.out).toContain('--model small-coder');
    expect(healthChecks).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it('a port that takes the connection but never answers is an error, and nothing is started', async () => {
    const { env } = fakeBins();
    const sockets: Socket[] = [];
    const mute = createNetServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const socket of sockets) socket.destroy();
          mute.close(() => r());
        }),
    );
    const url = `http://127.0.0.1:${(mute.address() as AddressInfo).port}`;
    const started = Date.now();
    const o = io();
    // 1.8 s: a first probe of 1.5 s met a connection and no answer, a second one the rest (the
    // wait goes on past a busy probe), as with the default 30 s.
    const code = await launchCommand(['pi', '--url', url, '--print'], o.io, env, { healthWaitMs: 1_800 });
    expect(code).toBe(1);
    expect(o.err.join('')).toContain('gave no healthy answer to GET /health');
    expect(o.err.join('')).not.toContain('toolproof --serve');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_750);
  }, 30_000);
});

describe('a URL where another program answers', () => {
  it('a program that answers /health with a 404 holds the port: said at once, not after 30 s, and nothing is started', async () => {
    const { env } = fakeBins();
    const other = createServer((_req, res) => res.writeHead(404).end('Not Found'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => other.close(() => r())));
    const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const started = Date.now();
    const o = io();
    expect(await launchCommand(['pi', '--url', url, '--print'], o.io, env)).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(o.err.join('')).toContain(`${url} answers, but not as toolproof does (GET /health: HTTP 404)`);
    expect(o.err.join('')).toContain('TOOLPROOF_PORT=PORT');
    expect(o.err.join('')).not.toContain('toolproof --serve');
  });

  it('a program that does not speak HTTP holds the port (an SSH server): said at once, not after 30 s, and nothing is started', async () => {
    const { env } = fakeBins();
    const sockets: Socket[] = [];
    const ssh = createNetServer((socket) => {
      sockets.push(socket);
      socket.end('SSH-2.0-OpenSSH_9.6\r\n');
    });
    await new Promise<void>((r) => ssh.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const socket of sockets) socket.destroy();
          ssh.close(() => r());
        }),
    );
    const url = `http://127.0.0.1:${(ssh.address() as AddressInfo).port}`;
    const started = Date.now();
    const o = io();
    expect(await launchCommand(['pi', '--url', url, '--print'], o.io, env)).toBe(1);
    // Before: 30 s of waiting, then "is toolproof running there?".
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(o.err.join('')).toContain(
      `${url} answers, but not as toolproof does (it answers GET /health, but not in HTTP`,
    );
    expect(o.err.join('')).toContain('TOOLPROOF_PORT=PORT');
    expect(o.err.join('')).not.toContain('toolproof --serve');
  });

  it("a model server's own URL (vLLM answers /health too) is refused, naming TOOLPROOF_UPSTREAM_URL: the agent ran against it without toolproof", async () => {
    const s = await sim({ personality: 'vllm', modelName: 'coder' });
    const o = io();
    expect(await launchCommand(['claude', '--url', s.url, '--print'], o.io, fakeBins().env, {})).toBe(1);
    const origin = s.url.replace(/\/v1$/, '');
    expect(o.err.join('')).toContain(`${origin} answers, but not as toolproof does`);
    expect(o.err.join('')).toContain(`toolproof launch claude --upstream ${origin}/v1`);
    expect(o.out.join('')).toBe('');
  });
});

describe('recipes', () => {
  it('every agent has a binary, a package and an API, and builds a plan without I/O', () => {
    for (const r of RECIPES) {
      const plan = buildPlan(
        r,
        { base: 'http://h', model: 'm', window: 1000, maxOutput: 100, key: 'k', api: r.apis[0]!, dir: '/d' },
        ['x'],
      );
      expect(plan.args.at(-1)).toBe('x');
      expect(r.pkg).toBeTruthy();
      expect(existsSync('/d')).toBe(false);
    }
  });
});

describe('pi names its session', () => {
  /** The one-run extension the launcher writes for pi on `api`, loaded as pi loads it, with a stand-in for pi. */
  async function piExtension(api: 'chat' | 'responses' | 'messages') {
    const recipe = RECIPES.find((r) => r.id === 'pi')!;
    const dir = mkdtempSync(join(tmpdir(), 'tp-pi-ext-'));
    const plan = buildPlan(recipe, { base: 'http://h', model: 'm', maxOutput: 100, key: 'k', api, dir }, []);
    const [path, text] = Object.entries(plan.files)[0]!;
    writeFileSync(path, text);
    const providers: Array<{ models: Array<{ compat?: Record<string, unknown> }> }> = [];
    const handlers: Record<string, (event: unknown, ctx: unknown) => unknown> = {};
    const mod = (await import(pathToFileURL(path).href)) as { default: (pi: unknown) => void };
    mod.default({
      registerProvider: (_name: string, p: (typeof providers)[0]) => providers.push(p),
      on: (event: string, handler: (typeof handlers)[string]) => {
        handlers[event] = handler;
      },
    });
    rmSync(dir, { recursive: true, force: true });
    return { provider: providers[0]!, handlers };
  }
  const ctx = { sessionManager: { getSessionId: () => 'sess-1' } };

  it("chat completions: its session headers on (pi reads a registered model's own compat)", async () => {
    const { provider, handlers } = await piExtension('chat');
    expect(provider.models[0]!.compat).toMatchObject({
      sendSessionAffinityHeaders: true,
      supportsDeveloperRole: false,
      supportsReasoningEffort: false,
    });
    expect(handlers.before_provider_request).toBeUndefined();
  });

  it('Messages: its session id in metadata.user_id, where toolproof reads it; a user_id of its own is kept', async () => {
    const { handlers } = await piExtension('messages');
    const hook = handlers.before_provider_request!;
    expect(hook({ payload: { model: 'm', messages: [] } }, ctx)).toEqual({
      model: 'm',
      messages: [],
      metadata: { user_id: 'sess-1' },
    });
    expect(hook({ payload: { metadata: { user_id: 'mine' } } }, ctx)).toBeUndefined();
    expect(
      hook({ payload: { model: 'm' } }, { sessionManager: { getSessionId: () => undefined } }),
    ).toBeUndefined();
  });
});

describe('Qwen Code names its session', () => {
  it("its settings add x-session-affinity with Qwen Code's session id, and allow the placeholder", () => {
    const recipe = RECIPES.find((r) => r.id === 'qwen')!;
    for (const window of [32768, undefined]) {
      const plan = buildPlan(
        recipe,
        {
          base: 'http://h',
          model: 'm',
          maxOutput: 100,
          key: 'k',
          api: 'chat',
          dir: '/d',
          ...(window ? { window } : {}),
        },
        [],
      );
      const settings = JSON.parse(plan.files['/d/qwen-settings.json']!) as {
        model: { generationConfig: Record<string, unknown> };
        outboundCorrelation: Record<string, unknown>;
      };
      expect(settings.model.generationConfig.customHeaders).toEqual({
        'x-session-affinity': QWEN_SESSION_ID,
      });
      expect(settings.model.generationConfig.contextWindowSize).toBe(window);
      expect(settings.outboundCorrelation).toEqual({ allowDynamicHeaderValues: true });
    }
  });
});

describe('Cline', () => {
  const target = {
    base: 'http://127.0.0.1:8787',
    model: 'coder',
    window: 32768,
    maxOutput: 4096,
    key: 'k',
    api: 'chat' as const,
    dir: '/d',
  };

  it("writes a providers file Cline 3.0.65 accepts: each entry's updatedAt is an ISO date-time", () => {
    // Cline parses the file with a schema that requires updatedAt; a file without it is dropped
    // whole and Cline goes to the vendor's URL ("Cannot connect to API" offline).
    const plan = buildPlan(RECIPES.find((r) => r.id === 'cline')!, target, []);
    const path = plan.env.CLINE_PROVIDER_SETTINGS_PATH!;
    const file = JSON.parse(plan.files[path]!) as {
      version: number;
      lastUsedProvider: string;
      providers: Record<
        string,
        { settings: Record<string, unknown>; updatedAt: string; tokenSource: string }
      >;
    };
    expect(file.version).toBe(1);
    const entry = file.providers[file.lastUsedProvider]!;
    expect(entry.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(entry.tokenSource).toBe('manual');
    expect(entry.settings).toEqual({
      provider: 'openai-compatible',
      apiKey: 'k',
      model: 'coder',
      baseUrl: 'http://127.0.0.1:8787/v1',
      contextWindow: 32768,
      maxTokens: 4096,
    });
    expect(plan.args).toEqual(['-P', 'openai-compatible', '-m', 'coder']);
  });

  it("runs the session in its own process, not in a hub daemon that reads the user's providers file", () => {
    const plan = buildPlan(RECIPES.find((r) => r.id === 'cline')!, target, []);
    expect(plan.env.CLINE_SESSION_BACKEND_MODE).toBe('local');
  });
});

describe('the SDKs: your program runs with the variables the SDK reads', () => {
  /** A project folder with the SDK package installed, and a program that prints what it got. */
  function project(pkg: string): { dir: string; program: string } {
    const dir = mkdtempSync(join(tmpdir(), 'tp-launch-sdk-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'node_modules', ...pkg.split('/')), { recursive: true });
    writeFileSync(join(dir, 'node_modules', ...pkg.split('/'), 'package.json'), '{"version":"0.0.0"}');
    const program = join(dir, 'app.mjs');
    writeFileSync(
      program,
      'const pick = (p) => Object.fromEntries(Object.entries(process.env).filter(([k]) => p.test(k)));\n' +
        "import { writeFileSync } from 'node:fs';\n" +
        'writeFileSync(process.argv[2], JSON.stringify({ args: process.argv.slice(3), env: pick(/^(OPENAI|ANTHROPIC|CLAUDE|TOOLPROOF|DISABLE)_/) }));\n',
    );
    return { dir, program };
  }

  function env(): NodeJS.ProcessEnv {
    return {
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: '/nonexistent',
      TOOLPROOF_AGENTS_DIR: '/nonexistent',
    };
  }

  it('openai-agents: base URL, key, default model, the API for setOpenAIAPI, window and output; tracing off; --print masks the key', async () => {
    const url = await toolproofOver(
      await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 24576 }),
    );
    const { program } = project('@openai/agents');
    const key = 'sk-secret-launch-key-123456';
    for (const [api, expected] of [
      [[], 'responses'],
      [['--api', 'chat'], 'chat_completions'],
    ] as const) {
      const r = await printed('openai-agents', url, [...api, '--', 'node', program, 'x'], {
        ...env(),
        TOOLPROOF_API_KEYS: key,
      });
      expect(r.code, r.err).toBe(0);
      expect(r.out + r.err).not.toContain(key);
      expect(r.out).toContain(`export OPENAI_BASE_URL=${url}/v1`);
      expect(r.out).toContain('export OPENAI_API_KEY=sk-s…****');
      expect(r.out).toContain('export OPENAI_DEFAULT_MODEL=coder');
      expect(r.out).toContain(`export TOOLPROOF_OPENAI_API=${expected}`);
      expect(r.out).toContain('export TOOLPROOF_CONTEXT_WINDOW=24576');
      expect(r.out).toContain('export TOOLPROOF_MAX_OUTPUT_TOKENS=6144');
      expect(r.out).toContain('export OPENAI_AGENTS_DISABLE_TRACING=1');
      expect(r.out.trim().split('\n').at(-1)).toBe(`node ${program} x`);
    }
    // It speaks Responses and chat completions, not Messages.
    const bad = await printed('openai-agents', url, ['--api', 'messages', '--', 'node', program]);
    expect(bad.code).toBe(2);
  });

  it("claude-agent-sdk: Claude Code's settings, the window reaching its auto-compaction; the program runs with them", async () => {
    const url = await toolproofOver(
      await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 32768 }),
    );
    const { dir, program } = project('@anthropic-ai/claude-agent-sdk');
    const p = await printed('claude-agent-sdk', url, ['--', 'node', program], env());
    expect(p.code, p.err).toBe(0);
    for (const line of [
      `export ANTHROPIC_BASE_URL=${url}`,
      'export ANTHROPIC_MODEL=coder',
      'export CLAUDE_CODE_SUBAGENT_MODEL=coder',
      'export CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768',
      'export CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000',
      'export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=27',
      'export CLAUDE_CODE_MAX_OUTPUT_TOKENS=8192',
      'export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
      'unset ANTHROPIC_API_KEY',
    ])
      expect(p.out).toContain(line);

    // Run for real: the program (found by its folder's node_modules) gets them, the user's own key is gone.
    const out = join(dir, 'got.json');
    const o = io();
    const code = await launchCommand(
      ['claude-agent-sdk', '--url', url, '--', 'node', program, out, 'a b'],
      o.io,
      { ...env(), ANTHROPIC_API_KEY: 'mine' },
      {},
    );
    expect(code, o.err.join('')).toBe(0);
    const got = JSON.parse(readFileSync(out, 'utf8')) as { args: string[]; env: Record<string, string> };
    expect(got.args).toEqual(['a b']);
    expect(o.err.join('')).toContain('Claude Agent SDK →');
    expect(got.env.ANTHROPIC_BASE_URL).toBe(url);
    expect(got.env.CLAUDE_CODE_AUTO_COMPACT_WINDOW).toBe('100000');
    expect(got.env.ANTHROPIC_API_KEY).toBeUndefined();
  });

  it("claude-agent-sdk: a user's Claude settings that would send query() elsewhere are named, with the launch's own settings file for `settings`", async () => {
    const url = await toolproofOver(
      await sim({ personality: 'vllm', modelName: 'coder', maxModelLen: 32768 }),
    );
    const { dir, program } = project('@anthropic-ai/claude-agent-sdk');
    const home = mkdtempSync(join(tmpdir(), 'tp-launch-sdk-home-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    mkdirSync(join(home, '.claude'));
    const userSettings = join(home, '.claude', 'settings.json');
    // What `toolproof launch claude --write` left for another port, and a key of the user's own.
    writeFileSync(
      userSettings,
      JSON.stringify({
        env: {
          ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
          ANTHROPIC_API_KEY: 'sk-user-own',
          ANTHROPIC_MODEL: 'coder',
        },
        permissions: { allow: ['Bash(*)'] },
      }),
    );
    const p = await printed('claude-agent-sdk', url, ['--', 'node', program], { ...env(), HOME: home });
    expect(p.code, p.err).toBe(0);
    // The model is the launch's own, so only the base URL and the key are named.
    expect(p.err).toContain(`${userSettings} sets ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL in its env`);
    expect(p.err).toContain('settings: process.env.TOOLPROOF_CLAUDE_SETTINGS');
    expect(p.out).toMatch(/export TOOLPROOF_CLAUDE_SETTINGS=\S+\/claude-settings\.json/);

    // The run: the file TOOLPROOF_CLAUDE_SETTINGS names holds the launch's variables while the program runs.
    const out = join(dir, 'got-settings.json');
    writeFileSync(
      program.replace(/\.mjs$/, '-settings.mjs'),
      "import { readFileSync, writeFileSync } from 'node:fs';\n" +
        'writeFileSync(process.argv[2], readFileSync(process.env.TOOLPROOF_CLAUDE_SETTINGS, "utf8"));\n',
    );
    const o = io();
    const code = await launchCommand(
      ['claude-agent-sdk', '--url', url, '--', 'node', program.replace(/\.mjs$/, '-settings.mjs'), out],
      o.io,
      { ...env(), HOME: home },
      {},
    );
    expect(code, o.err.join('')).toBe(0);
    const settings = JSON.parse(readFileSync(out, 'utf8')) as { env: Record<string, string> };
    expect(settings.env.ANTHROPIC_BASE_URL).toBe(url);
    expect(settings.env.ANTHROPIC_MODEL).toBe('coder');
    // An empty value unsets it for Claude Code: the user's own key is not used.
    expect(settings.env.ANTHROPIC_API_KEY).toBe('');

    // Settings that agree with the launch (or have no env) are not named.
    writeFileSync(userSettings, JSON.stringify({ env: { ANTHROPIC_MODEL: 'coder' } }));
    const quiet = await printed('claude-agent-sdk', url, ['--', 'node', program], { ...env(), HOME: home });
    expect(quiet.code, quiet.err).toBe(0);
    expect(quiet.err).not.toContain('in its env');
    writeFileSync(userSettings, '{ not json');
    const broken = await printed('claude-agent-sdk', url, ['--', 'node', program], { ...env(), HOME: home });
    expect(broken.code, broken.err).toBe(0);
    expect(broken.err).not.toContain('in its env');
  });

  it('a missing SDK names its npm package and runs nothing; no program after -- is a usage error', async () => {
    const url = await toolproofOver(await sim({ personality: 'vllm', modelName: 'coder' }));
    // Neither in the working directory (the clone) nor the program's folder nor the agents cache.
    const dir = mkdtempSync(join(tmpdir(), 'tp-launch-nosdk-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const marker = join(dir, 'ran');
    writeFileSync(join(dir, 'app.mjs'), `require('node:fs').writeFileSync(${JSON.stringify(marker)}, '')\n`);
    const o = io();
    const code = await launchCommand(
      ['claude-agent-sdk', '--url', url, '--', 'node', join(dir, 'app.mjs')],
      o.io,
      env(),
      {},
    );
    expect(code).toBe(127);
    expect(o.err.join('')).toContain('npm install @anthropic-ai/claude-agent-sdk');
    expect(existsSync(marker)).toBe(false);

    const u = io();
    expect(await launchCommand(['claude-agent-sdk', '--url', url], u.io, env(), {})).toBe(2);
    expect(u.err.join('')).toContain('put your program after --');
    // --print without a program: the variables, for the user's own shell.
    const p = await printed('claude-agent-sdk', url, [], env());
    expect(p.code, p.err).toBe(0);
    expect(p.out).toContain('export ANTHROPIC_BASE_URL=');
    expect(p.out).toContain('# then run your program');
    expect(p.err).toContain('npm install @anthropic-ai/claude-agent-sdk');
  });
});

describe('a model name written into TOML (Codex)', () => {
  it('escapes DEL, which JSON leaves raw and TOML refuses, and refuses a lone surrogate by name', () => {
    expect(tomlString('m\u007fx')).toBe('"m\\u007Fx"');
    expect(tomlString('qwen/3 "big"\n\u00e9\ud83d\ude00')).toBe(
      JSON.stringify('qwen/3 "big"\n\u00e9\ud83d\ude00'),
    );
    expect(() => tomlString('m\ud800')).toThrow(/cannot be written in TOML/);
  });
});

describe('files an agent writes into the folder at every start', () => {
  // Grok CLI 0.0.34 writes `.grok/settings.json` ({"model": "grok-code-fast-1"}, its default model,
  // not the launch's) into the folder it starts in whenever there is none: every launch left it in
  // the user's project. The fake below writes it as grok-cli's settings-manager.js does.
  const GROK = (extra: string) =>
    `#!/bin/sh\n[ -e .grok/settings.json ] || { mkdir -p .grok && printf '{\\n  "model": "grok-code-fast-1"${extra}\\n}' > .grok/settings.json; }\nexit 3\n`;

  async function launchIn(project: string, script: string) {
    const { env } = fakeBins();
    const bin = env.PATH!.split(':')[0]!;
    writeFileSync(join(bin, 'grok'), script);
    const url = await toolproofOver(await sim({ personality: 'vllm' }));
    const child = spawn(
      process.execPath,
      [...nodeEntry('cli/toolproof.ts'), 'launch', 'grok', '--url', url],
      {
        cwd: project,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    return { code, out };
  }

  const project = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-launch-project-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it("the one the agent wrote with its defaults is removed after the run, and said; the agent's status passes through", async () => {
    const dir = project();
    const r = await launchIn(dir, GROK(''));
    expect(r.code, r.out).toBe(3);
    expect(readdirSync(dir), r.out).toEqual([]);
    expect(r.out).toContain(
      "removed .grok/settings.json, which Grok CLI writes into the folder it starts in (its defaults, not this run's settings)",
    );
  });

  it("the user's own file, or one the run changed, stays", async () => {
    const own = project();
    mkdirSync(join(own, '.grok'));
    writeFileSync(join(own, '.grok', 'settings.json'), '{"model": "grok-code-fast-1"}');
    const a = await launchIn(own, GROK(''));
    expect(a.code, a.out).toBe(3);
    expect(readFileSync(join(own, '.grok', 'settings.json'), 'utf8')).toBe('{"model": "grok-code-fast-1"}');
    expect(a.out).not.toContain('removed');
    // The run added an MCP server to it (grok's `mcp add` writes there): the user's now.
    const changed = project();
    const b = await launchIn(changed, GROK(',\\n  "mcpServers": {}'));
    expect(b.code, b.out).toBe(3);
    expect(existsSync(join(changed, '.grok', 'settings.json')), b.out).toBe(true);
    expect(b.out).not.toContain('removed');
  });
});
