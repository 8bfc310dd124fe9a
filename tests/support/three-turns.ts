/**
 * Three turns of one agent session against a simulator that refuses something once: each turn's
 * upstream attempts and the body its last attempt sent. `turn` sends one turn through toolproof
 * with the history so far (the answers and the follow-ups, alternating) and returns the answer
 * text the client got; each must be `answer`. Shared by the refusal-memory e2e tests
 * (image-decode, tool-images, output-budget), which then assert [2, 1, 1] and the prefix.
 */
import { expect } from 'vitest';

export interface ThreeTurns {
  readonly attempts: number[];
  readonly bodies: string[];
}

export async function threeTurns(
  sent: () => readonly { readonly rawBody: string }[],
  answer: string,
  turn: (history: string[]) => Promise<string>,
): Promise<ThreeTurns> {
  const history: string[] = [];
  const attempts: number[] = [];
  const bodies: string[] = [];
  for (let t = 0; t < 3; t++) {
    const before = sent().length;
    expect(await turn(history)).toBe(answer);
    const mine = sent().slice(before);
    attempts.push(mine.length);
    bodies.push(mine.at(-1)!.rawBody);
    history.push(answer, `turn ${t + 2}: go on`);
  }
  return { attempts, bodies };
}
