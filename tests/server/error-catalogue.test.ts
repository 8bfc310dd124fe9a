import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, ToolproofError } from '../../protocol/errors.js';
import { openAIErrorBody as toErrorBody } from '../../server/front-doors/chat/errors.js';

function sources(dir: string): string {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .map((path) =>
      statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? readFileSync(path, 'utf8') : '',
    )
    .join('\n');
}

describe('the error catalogue', () => {
  const code = sources('server') + sources('policies');

  it.each(Object.keys(ERROR_CATALOGUE))(
    '%s is used by the server and has an OpenAI type and a status',
    (name) => {
      expect(code).toContain(name);
      const spec = ERROR_CATALOGUE[name as keyof typeof ERROR_CATALOGUE];
      expect(spec.status).toBeGreaterThanOrEqual(400);
      expect(spec.type).toMatch(/_error$/);
      const body = toErrorBody(new ToolproofError(name as keyof typeof ERROR_CATALOGUE));
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    },
  );

  it('keeps the cause', () => {
    const cause = new Error('root');
    expect(new ToolproofError('TP_ERR_INTERNAL', { cause }).cause).toBe(cause);
  });
});
