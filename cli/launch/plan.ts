/**
 * A launch plan: what one recipe sets for one target, as plain data (pure), and its printout with
 * the key masked. `command.ts` writes the files and starts the process.
 */
import { join } from 'node:path';
import type { AgentRecipe, Target } from './recipes.js';

export interface LaunchPlan {
  recipe: AgentRecipe;
  /** Variables set (over the user's environment). */
  env: Record<string, string>;
  /** Variables removed from the user's environment. */
  unset: string[];
  /** Temporary files: absolute path → content. */
  files: Record<string, string>;
  /** The full argument list: the recipe's, then the user's. */
  args: string[];
}

export function buildPlan(recipe: AgentRecipe, target: Target, userArgs: readonly string[]): LaunchPlan {
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(recipe.files?.(target) ?? {}))
    files[join(target.dir, name)] = text;
  return {
    recipe,
    env: { ...recipe.quiet, ...recipe.env?.(target) },
    unset: [...(recipe.unset ?? [])],
    files,
    args: [...(recipe.quietArgs ?? []), ...(recipe.args?.(target) ?? []), ...userArgs],
  };
}

/** The child's environment: the user's, minus `unset`, plus the plan's. */
export function childEnv(plan: LaunchPlan, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of plan.unset) delete env[name];
  return { ...env, ...plan.env };
}

/** Keys shorter than this show none of their characters (4 of 12 is a third of the secret). */
export const MASK_SHOWS_FROM = 16;

/**
 * Every occurrence of the key, masked: a long key shows its first 4 characters (to tell keys
 * apart), a shorter one nothing but its length.
 */
export function maskKey(text: string, key: string): string {
  if (!key) return text;
  const mask = key.length >= MASK_SHOWS_FROM ? `${key.slice(0, 4)}…****` : `****(${key.length} characters)`;
  return text.split(key).join(mask);
}

/** A POSIX-shell word. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `--print`: the variables, files and command, the key masked everywhere. */
export function renderPlan(plan: LaunchPlan, bin: string | undefined, key: string): string {
  const lines: string[] = [];
  for (const name of plan.unset) lines.push(`unset ${name}`);
  for (const [name, value] of Object.entries(plan.env)) lines.push(`export ${name}=${shellQuote(value)}`);
  for (const [path, text] of Object.entries(plan.files)) {
    // --print writes none of them: a variable or argument naming one names nothing until a run
    // (or --write) puts it there. Said, so the lines are not taken for a setup to paste.
    lines.push(
      `# temporary file ${path} (not written by --print: a run writes it, and removes it when the agent exits):`,
    );
    for (const line of text.replace(/\n$/, '').split('\n')) lines.push(`#   ${line}`);
  }
  // An SDK without a program named: the variables are for the user's own.
  if (bin === undefined) lines.push('# then run your program in this environment, e.g. node app.mjs');
  else lines.push([bin, ...plan.args].map(shellQuote).join(' '));
  return `${maskKey(lines.join('\n'), key)}\n`;
}
