/** Where an agent's executable is: PATH first, then the agents cache (scripts/install-agents.mjs). */
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The cache folders install-agents uses, newest first. */
export function agentCacheDirs(env: NodeJS.ProcessEnv): string[] {
  if (env.TOOLPROOF_AGENTS_DIR) return [env.TOOLPROOF_AGENTS_DIR];
  const root = join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache'), 'toolproof', 'agents');
  try {
    return readdirSync(root)
      .filter((name) => !name.includes('.tmp-'))
      .map((name) => join(root, name))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  } catch {
    return [];
  }
}

export function findBin(bin: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && executable(join(dir, bin))) return join(dir, bin);
  }
  for (const dir of agentCacheDirs(env)) {
    const path = join(dir, 'node_modules', '.bin', bin);
    if (executable(path)) return path;
  }
  return undefined;
}

/**
 * Where an npm package is installed for a program: `node_modules/<pkg>` in each of `dirs` or a
 * folder above it (Node's own lookup), then in the agents cache.
 */
export function findPackage(
  pkg: string,
  dirs: readonly string[],
  env: NodeJS.ProcessEnv,
): string | undefined {
  for (const start of dirs) {
    let dir = resolve(start);
    for (;;) {
      const path = join(dir, 'node_modules', pkg);
      if (existsSync(join(path, 'package.json'))) return path;
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  for (const dir of agentCacheDirs(env)) {
    const path = join(dir, 'node_modules', pkg);
    if (existsSync(join(path, 'package.json'))) return path;
  }
  return undefined;
}
