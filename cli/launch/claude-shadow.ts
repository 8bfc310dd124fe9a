/**
 * Claude Code applies the `env` of its settings files over its own environment: the user's
 * (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/settings.json`) and the project's
 * (`.claude/settings.json`, `.claude/settings.local.json` in the working directory). The launcher
 * runs `claude` with a `--settings` file that ranks above them (recipes.ts), but a Claude Agent
 * SDK program starts Claude Code itself: its `query()` loads those files unless the program passes
 * `settings` (a file that ranks above them) or `settingSources: []`. This finds what in them would
 * send such a run elsewhere (the variables the launch sets, with another value, or those it
 * removes), so the launcher can say so, and which file and which option fix it.
 */
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** A settings file larger than this is not read (Claude Code's are a few KB). */
const MAX_SETTINGS_BYTES = 1 << 20;

export interface Shadowing {
  /** The settings file. */
  path: string;
  /** The variables in its `env` that override the launch's, sorted. */
  names: string[];
}

/** The settings files Claude Code reads, in the order it ranks them (lowest first). */
export function claudeSettingsFiles(env: NodeJS.ProcessEnv, cwd: string): string[] {
  const config = env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
  return [
    join(config, 'settings.json'),
    join(cwd, '.claude', 'settings.json'),
    join(cwd, '.claude', 'settings.local.json'),
  ];
}

/** The file's `env` object, or undefined when there is none to read (absent, too big, not JSON). */
function settingsEnv(path: string): Record<string, unknown> | undefined {
  try {
    if (statSync(path).size > MAX_SETTINGS_BYTES) return undefined;
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    const env = (parsed as { env?: unknown } | null)?.env;
    return env && typeof env === 'object' && !Array.isArray(env)
      ? (env as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Each settings file whose `env` would override the launch: a variable the launch sets (`set`)
 * given another value there, or one it removes (`unset`) given any non-empty value.
 */
export function claudeShadowing(
  env: NodeJS.ProcessEnv,
  cwd: string,
  set: Record<string, string>,
  unset: readonly string[],
): Shadowing[] {
  const found: Shadowing[] = [];
  for (const path of claudeSettingsFiles(env, cwd)) {
    const theirs = settingsEnv(path);
    if (!theirs) continue;
    const names = Object.keys(theirs)
      .filter((name) => {
        const value = theirs[name];
        if (value === undefined || value === null || value === '') return false;
        if (Object.hasOwn(set, name)) return String(value) !== set[name];
        return unset.includes(name);
      })
      .sort();
    if (names.length > 0) found.push({ path, names });
  }
  return found;
}
