/**
 * The output reserve `toolproof launch` chooses per agent and window (cli/launch/reserve.ts): a
 * quarter of a large window as before; on a small one at most half of what the agent's own prompt
 * leaves, never under a tool call's 1,024 tokens; a window the prompt leaves too little of is said
 * to be too small. Before, Kilo on 16k got 4,096 beside its ~12.6k prompt: the window was full
 * before any file, and it compacted before every turn that carried one.
 */
import { describe, expect, it } from 'vitest';
import { findRecipe } from '../../cli/launch/recipes.js';
import { chooseReserve } from '../../cli/launch/reserve.js';

const WINDOWS = [8192, 16_384, 32_768, 131_072] as const;
/** Each agent's reserve on 8k, 16k, 32k and 128k; `small` marks a window said to be too small. */
const EXPECTED: Record<string, Array<number | 'small'>> = {
  claude: ['small', 2092, 8192, 32_768],
  codex: ['small', 3142, 8192, 32_768],
  opencode: ['small', 4096, 8192, 32_768],
  qwen: ['small', 'small', 6884, 32_768],
  pi: [2048, 4096, 8192, 32_768],
  kilo: ['small', 1892, 8192, 32_768],
  cline: [1346, 4096, 8192, 32_768],
  // No recording of their prompts: a quarter of the window, as before.
  cn: [2048, 4096, 8192, 32_768],
  grok: [2048, 4096, 8192, 32_768],
};

describe('the output reserve per agent and window', () => {
  for (const [id, row] of Object.entries(EXPECTED))
    it(`${id}: ${row.join(', ')}`, () => {
      const agent = findRecipe(id)!;
      WINDOWS.forEach((window, i) => {
        const r = chooseReserve(agent, window, undefined);
        const want = row[i]!;
        if (want === 'small') {
          expect(r.tooSmall, `${id} ${window}`).toMatch(/too small for it to call a tool or read a file/);
          // Never more than the window leaves beside the prompt, nor than a tool call needs.
          expect(r.tokens).toBeLessThanOrEqual(1024);
          expect(r.tokens).toBeGreaterThan(0);
        } else {
          expect(r.tokens, `${id} ${window}`).toBe(want);
          expect(r.tooSmall, `${id} ${window}`).toBeUndefined();
          // The prompt, the reserve and as much again for the conversation fit the window.
          if (agent.promptTokens) expect(agent.promptTokens + 2 * r.tokens).toBeLessThanOrEqual(window);
        }
      });
    });

  it('the line says why: Kilo on 16k, half of what its prompt leaves; on 128k, a quarter', () => {
    const kilo = findRecipe('kilo')!;
    expect(chooseReserve(kilo, 16_384, undefined).why).toBe(
      "half of what Kilo CLI's own prompt (~12.6k tokens) leaves of the window, so a file fits before it compacts (a quarter of the window, 1k to 32k: 4096)",
    );
    expect(chooseReserve(kilo, 131_072, undefined).why).toBe('a quarter of the window, 1k to 32k');
    expect(chooseReserve(kilo, 8192, undefined).tooSmall).toBe(
      "Kilo CLI's own prompt (~12.6k tokens) is over this 8192-token window: too small for it to call a tool or read a file; give it a model with a window of at least 16696",
    );
  });

  it("toolproof's stated limit: kept while it leaves the conversation as much, else bounded as the quarter is", () => {
    const kilo = findRecipe('kilo')!;
    expect(chooseReserve(kilo, 131_072, 32_768)).toEqual({
      tokens: 32_768,
      why: "toolproof's stated output limit",
    });
    expect(chooseReserve(kilo, 131_072, 65_536).tokens).toBe(59_236);
    // A backend that states its whole window as the output limit (llama-server's n_ctx).
    expect(chooseReserve(kilo, 16_384, 16_384).tokens).toBe(1892);
    expect(chooseReserve(kilo, 16_384, 512).tokens).toBe(512);
    // No window known: the stated limit, or 8k.
    expect(chooseReserve(kilo, undefined, undefined).tokens).toBe(8192);
  });
});
