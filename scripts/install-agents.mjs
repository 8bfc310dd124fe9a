#!/usr/bin/env node
/**
 * Installs the pinned coding-agent CLIs that `npm run test:agents` drives, into a cache folder
 * outside the clone and its node_modules, and checks each one with `--version`.
 *
 *   node scripts/install-agents.mjs            install when missing, then check; prints the folder
 *   node scripts/install-agents.mjs --check    check only (exit 1 when missing or broken)
 *   node scripts/install-agents.mjs --json     as either, but prints {dir, bins, versions} as JSON
 *
 * Folder: $TOOLPROOF_AGENTS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/toolproof/agents/<hash of the
 * pins and the platform>. A folder that holds a complete install is reused as it is.
 *
 * Install scripts: Claude Code, opencode, Kilo and Cline copy their native binary into place in a
 * postinstall script. npm 11 reviews install scripts through the project's `allowScripts` field (11.19 still
 * runs an unreviewed one, with a warning; the policy is announced to become blocking, and
 * `strict-allow-scripts` or `ignore-scripts` in a user's npmrc block it today). The folder's
 * package.json allows exactly those packages, by name (this npm writes lockfiles without
 * resolved URLs, which version-pinned entries need). Codex ships its binary in a platform
 * package (an optional dependency), which needs no script.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const AGENTS = [
  { id: 'claude', pkg: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude', script: true },
  { id: 'codex', pkg: '@openai/codex', version: '0.171.0', bin: 'codex', script: false },
  { id: 'opencode', pkg: 'opencode-ai', version: '1.18.33', bin: 'opencode', script: true },
  { id: 'qwen', pkg: '@qwen-code/qwen-code', version: '0.24.4', bin: 'qwen', script: false },
  { id: 'pi', pkg: '@mariozechner/pi-coding-agent', version: '0.73.1', bin: 'pi', script: false },
  { id: 'cn', pkg: '@continuedev/cli', version: '1.5.47', bin: 'cn', script: false },
  { id: 'kilo', pkg: '@kilocode/cli', version: '7.7.7', bin: 'kilo', script: true },
  { id: 'cline', pkg: 'cline', version: '3.0.65', bin: 'cline', script: true },
  // 0.0.34's `--version` prints a hard-coded 1.0.1.
  { id: 'grok', pkg: '@vibe-kit/grok-cli', version: '0.0.34', bin: 'grok', script: false, reports: '1.0.1' },
  // A library, not a CLI: checked by its package.json version; it drives the Claude Code binary
  // its platform package (an optional dependency) ships.
  {
    id: 'claude-agent-sdk',
    pkg: '@anthropic-ai/claude-agent-sdk',
    version: '0.3.335',
    bin: null,
    script: false,
  },
];

export function agentsDir(env = process.env) {
  if (env.TOOLPROOF_AGENTS_DIR) return env.TOOLPROOF_AGENTS_DIR;
  const pins = AGENTS.map((a) => `${a.pkg}@${a.version}`).join('\n');
  const hash = createHash('sha256')
    .update(`${pins}\n${process.platform}-${process.arch}\n`)
    .digest('hex')
    .slice(0, 12);
  const cache = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  return join(cache, 'toolproof', 'agents', hash);
}

function binPath(dir, agent) {
  return agent.bin ? join(dir, 'node_modules', '.bin', agent.bin) : join(dir, 'node_modules', agent.pkg);
}

/** Runs each CLI's `--version`; returns {id: version} or throws naming the broken one. */
export function checkAgents(dir) {
  const versions = {};
  for (const agent of AGENTS) {
    const bin = binPath(dir, agent);
    if (!existsSync(bin)) throw new Error(`${agent.pkg}: ${bin} is missing`);
    if (!agent.bin) {
      const { version } = JSON.parse(readFileSync(join(bin, 'package.json'), 'utf8'));
      if (version !== agent.version)
        throw new Error(`${agent.pkg}: ${version} installed, ${agent.version} pinned`);
      versions[agent.id] = agent.version;
      continue;
    }
    const run = spawnSync(bin, ['--version'], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, CI: 'true', NO_COLOR: '1' },
    });
    const out = `${run.stdout ?? ''}${run.stderr ?? ''}`;
    if (run.status !== 0 || !out.includes(agent.reports ?? agent.version)) {
      throw new Error(
        `${agent.pkg}: \`${agent.bin} --version\` exited ${run.status ?? run.signal} without ${agent.reports ?? agent.version}: ${out.trim().slice(0, 300)}`,
      );
    }
    versions[agent.id] = agent.version;
  }
  return versions;
}

function install(dir) {
  // Install beside the final folder, then rename: an interrupted install never looks complete.
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const manifest = {
    name: 'toolproof-agents',
    private: true,
    description: 'Pinned agent CLIs for toolproof’s agent suite (scripts/install-agents.mjs)',
    dependencies: Object.fromEntries(AGENTS.map((a) => [a.pkg, a.version])),
    allowScripts: Object.fromEntries(AGENTS.filter((a) => a.script).map((a) => [a.pkg, true])),
  };
  writeFileSync(join(tmp, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-update-notifier', '--loglevel=error', '--include=optional'],
    { cwd: tmp, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  checkAgents(tmp);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
}

function main() {
  const args = new Set(process.argv.slice(2));
  const dir = agentsDir();
  const started = Date.now();
  let versions;
  let installed = false;
  try {
    versions = checkAgents(dir);
  } catch (err) {
    if (args.has('--check')) {
      console.error(`install-agents: ${err.message}`);
      process.exit(1);
    }
    console.error(`install-agents: installing into ${dir}`);
    install(dir);
    versions = checkAgents(dir);
    installed = true;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (args.has('--json')) {
    const bins = Object.fromEntries(AGENTS.map((a) => [a.id, binPath(dir, a)]));
    console.log(JSON.stringify({ dir, bins, versions, installed, seconds: Number(seconds) }));
  } else {
    console.log(`${dir} (${installed ? 'installed' : 'cached'}, ${seconds} s)`);
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) main();
