/**
 * `list.push(...items)` passes every item as an argument on the stack and throws a RangeError past
 * ~120k items (protocol/append-all.ts). It was taken out of server/, policies/, protocol/ and
 * parsers/ once, and three came back (tests/redteam/spread-lists.test.ts: a model output of 65,000
 * calls was a 500 on every door). A source scan keeps it out: pushAll appends a list.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const DIRS = ['server', 'policies', 'protocol', 'parsers'];

describe('no push(...list) where lists come from clients or upstreams', () => {
  it('server/, policies/, protocol/, parsers/', () => {
    const found: string[] = [];
    for (const dir of DIRS)
      for (const f of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
        if (!f.endsWith('.ts')) continue;
        readFileSync(join(root, dir, f), 'utf8')
          .split('\n')
          .forEach((line, i) => {
            const code = line.replace(/\/\/.*$/, '');
            if (/^\s*\*/.test(code)) return;
            if (/\.(?:push|unshift)\(\s*\.\.\./.test(code))
              found.push(`${dir}/${f}:${i + 1}: ${line.trim()}`);
          });
      }
    expect(found).toEqual([]);
  });
});
