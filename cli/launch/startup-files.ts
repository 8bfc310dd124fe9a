/**
 * Files an agent writes into the working folder at every start, whatever the run does (recipes.ts
 * `startupFiles`): Grok CLI 0.0.34 writes `.grok/settings.json` holding its default model
 * (`grok-code-fast-1`, not the model the launch runs) into the folder it starts in when there is
 * none, so each launch left that file in the user's project, an untracked file in their
 * repository. One that was not there before the run and still holds only what the agent writes
 * at start is removed after it, with its folder when that is then empty; a file of the user's,
 * or one the run changed, stays.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

export interface StartupFile {
  /** Relative to the working folder. */
  path: string;
  /** The file holds only what the agent writes at start. */
  fresh(text: string): boolean;
}

/** The files of `files` absent from `cwd` now: what to look at once the agent has exited. */
export function absentStartupFiles(files: readonly StartupFile[] | undefined, cwd: string): StartupFile[] {
  return (files ?? []).filter((f) => !existsSync(join(cwd, f.path)));
}

/** Removes those the agent wrote at start and left as it wrote them; the paths removed. */
export function removeStartupFiles(files: readonly StartupFile[], cwd: string): string[] {
  const removed: string[] = [];
  for (const f of files) {
    const path = join(cwd, f.path);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    if (!f.fresh(text)) continue;
    rmSync(path, { force: true });
    removed.push(f.path);
    // Its folders up to the working folder, each while it is empty (the agent made them).
    for (let dir = dirname(path); relative(cwd, dir) !== '' && !relative(cwd, dir).startsWith('..'); ) {
      try {
        if (readdirSync(dir).length > 0) break;
        rmdirSync(dir);
      } catch {
        break;
      }
      dir = dirname(dir);
    }
  }
  return removed;
}
