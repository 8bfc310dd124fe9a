/**
 * Pattern-heavy tool schemas for the compile-budget tests (schema-budget.test.ts, its heap probe
 * and tests/hardening/schema-compile-health.test.ts). Not a test file itself.
 */

/** `n` string properties with a distinct pattern each, and arguments that match them all. */
export function patternSchema(seed: string, n: number) {
  const properties: Record<string, unknown> = {};
  const args: Record<string, string> = {};
  for (let j = 0; j < n; j++) {
    properties[`p${j}`] = {
      type: 'string',
      pattern: `^[a-z]{1,${8 + (j % 9)}}-${seed}-${j}(foo|bar|baz)[0-9]+$`,
    };
    args[`p${j}`] = `abc-${seed}-${j}foo1`;
  }
  return { schema: { type: 'object', properties }, args };
}
