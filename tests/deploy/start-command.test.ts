/**
 * The server's node flags are written once, in package.json's start script; the container
 * image's command must start the same process (the bench measures the start script's).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startFlags } from '../../bench/lib/build.js';

const ROOT = join(import.meta.dirname, '../..');

describe('start command', () => {
  it("the image's CMD runs dist/server/main.js with npm start's node flags", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd).toBeDefined();
    const argv = JSON.parse(cmd!) as string[];
    expect(argv[0]).toBe('node');
    expect(argv.at(-1)).toBe('dist/server/main.js');
    expect(argv.slice(1, -1)).toEqual(startFlags(ROOT));
  });

  it('npm start caps the young generation and keeps source maps', () => {
    expect(startFlags(ROOT)).toEqual(['--enable-source-maps', '--max-semi-space-size=8']);
  });
});
