/**
 * A long agent session in a full capture ring, walked in the inspector as its user walks it
 * (headless Chromium, Debian's /usr/bin/chromium): 56 turns of a tool loop behind a 1 MB ring,
 * which keeps only the last of them, and the agent editing an earlier message on the way. The
 * session view said "first turn" (numbered 1) of a turn that carried dozens of the model's
 * replies: the turns before it were dropped from the ring, and nothing said so.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTurn } from '../server/stack.js';
import { chromiumAvailable, openPage, refreshed } from '../support/browser.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');
const TURNS = 56;
/** The turn whose prompt has the opening question edited (Paris into Lyon). */
const EDITED = 50;
const QUESTION = 'Quel temps à Paris? ';

let stack: Stack;
let close: (() => Promise<void>) | undefined;
let page: Page;
let key = '';
let held: Array<{ summary: { id: string }; prefix: Record<string, unknown> | null }> = [];
const session = { 'x-claude-code-session-id': 'long-walk', 'x-sim-scenario': 'tools' };
const messages: Array<Record<string, unknown>> = [
  { role: 'system', content: `You are an agent. ${'Use the tools. '.repeat(100)}` },
  { role: 'user', content: `${QUESTION}${'details '.repeat(300)}` },
];
const next = (turn: number) =>
  weatherTurn(
    stack,
    messages,
    { ...session, 'x-request-id': `turn-${turn}` },
    { result: 'sunny '.repeat(200) },
  );

describe.skipIf(!chromiumAvailable)('a long agent session in a full ring, in the inspector', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({ sim: { promptTokensDetails: true }, env: { TOOLPROOF_CAPTURE_MB: '1' } });
    for (let turn = 0; turn < TURNS; turn++) {
      if (turn === EDITED)
        messages[1] = { role: 'user', content: String(messages[1]!.content).replace('Paris', 'Lyon') };
      await next(turn);
    }
    const list = (await (await fetch(`${stack.origin}/inspect/api/requests`)).json()) as {
      requests: Array<{ session: string }>;
    };
    key = list.requests[0]!.session;
    const session2 = (await (
      await fetch(`${stack.origin}/inspect/api/session?key=${encodeURIComponent(key)}`)
    ).json()) as { turns: typeof held };
    held = session2.turns;
    ({ page, close } = await openPage());
  }, 120_000);

  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  it('says that the first turn held continues turns the ring dropped, with how many replies it carries', () => {
    // The ring holds only the last turns; the first of them is not the session's first.
    expect(held.length).toBeGreaterThan(8);
    expect(held.length).toBeLessThan(TURNS);
    const firstHeld = Number(held[0]!.summary.id.slice('turn-'.length));
    expect(firstHeld).toBeGreaterThan(0);
    // Each turn of the loop carries one reply of the model per turn before it.
    expect(held[0]!.prefix).toEqual({ earlier: firstHeld });
    expect(held[1]!.prefix).toEqual({ kept: true });
  });

  it('shows it, names the edited byte, and walks by keyboard', async () => {
    await page.goto(`${stack.origin}/inspect#/s/${encodeURIComponent(key)}`);
    const rows = page.locator('#turns tbody tr[data-id]');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(held.length);
    const firstHeld = Number(held[0]!.summary.id.slice('turn-'.length));
    expect(await page.locator('#earlier').textContent()).toContain(
      `The capture holds the last ${held.length} turns of this session: the first one held carries ${firstHeld} earlier replies`,
    );
    expect(await rows.first().locator('td.prefix').textContent()).toBe(
      `continues ${firstHeld} earlier replies not in the capture`,
    );
    // The edit of the opening question: named in messages[1], at the byte of "P" of Paris.
    const edited = page.locator(`#turns tbody tr[data-id="turn-${EDITED}"] td.prefix`);
    expect(await edited.textContent()).toContain(
      `changed in messages[1] of the prompt sent, at its byte ${Buffer.byteLength(`{"role":"user","content":"${QUESTION.slice(0, -'Paris? '.length)}`)}`,
    );
    expect(await edited.locator('mark.first-change').allTextContents()).toEqual(['P', 'L']);
    await page.screenshot({ path: join(ARTIFACTS, 'long-session.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(ARTIFACTS, 'long-session-dark.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });

    // j to the last turn (the selection follows, scrolled into view), Enter opens it, Esc returns
    // to the session with the same turn selected.
    for (let i = 0; i < held.length; i++) await page.keyboard.press('j');
    const last = held[held.length - 1]!.summary.id;
    expect(await page.locator('#turns tr[aria-selected="true"]').getAttribute('data-id')).toBe(last);
    expect(await page.locator('#turns tr[aria-selected="true"]').isVisible()).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#request-id').textContent()).toBe(last);
    await page.keyboard.press('Escape');
    await page.locator('#turns').waitFor();
    expect(await page.locator('#turns tr[aria-selected="true"]').getAttribute('data-id')).toBe(last);
  });

  it('pages through its requests by keyboard: ] starts the older page at its first row, Back returns to the row left', async () => {
    const selectedRow = () => page.locator('#requests tr[aria-selected="true"]').getAttribute('data-id');
    const ids = () =>
      page.locator('#requests tr[data-id]').evaluateAll((t) => t.map((r) => r.getAttribute('data-id')));
    await page.goto(`${stack.origin}/inspect#/?limit=5`);
    await expect.poll(async () => (await ids()).length).toBe(5);
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    const newest = await ids();
    for (let i = 0; i < 4; i++) await page.keyboard.press('j');
    expect(await selectedRow()).toBe(newest[4]);
    await page.keyboard.press(']');
    // The older page drawn whole (an empty table while it loads is not it).
    await expect
      .poll(async () => {
        const now = await ids();
        return now.length === 5 && !now.includes(newest[0]!);
      })
      .toBe(true);
    const older = await ids();
    // The older page's first row, where the reader goes on (it was its last: the index kept).
    expect(await selectedRow()).toBe(older[0]);
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#request-id').textContent()).toBe(older[1]);
    await page.keyboard.press('Escape');
    await expect.poll(ids).toEqual(older);
    expect(await selectedRow()).toBe(older[1]);
    // Back to the newest page: its row as the reader left it.
    await page.goBack();
    await expect.poll(ids).toEqual(newest);
    expect(await selectedRow()).toBe(newest[4]);
  });

  it('shows the turns the agent goes on making, live, the selected turn kept', async () => {
    await page.goto(`${stack.origin}/inspect#/s/${encodeURIComponent(key)}`);
    await page.locator('#turns tbody tr[data-id]').first().waitFor();
    // The last turn but two selected: j to the end, k twice.
    for (let i = 0; i < held.length; i++) await page.keyboard.press('j');
    await page.keyboard.press('k');
    await page.keyboard.press('k');
    const selected = held[held.length - 3]!.summary.id;
    expect(await page.locator('#turns tr[aria-selected="true"]').getAttribute('data-id')).toBe(selected);
    // The agent's next turn: it appears without a reload.
    await next(TURNS);
    await page.locator(`#turns tbody tr[data-id="turn-${TURNS}"]`).waitFor({ timeout: 10_000 });
    expect(await page.locator(`#turns tbody tr[data-id="turn-${TURNS}"] td.prefix`).textContent()).toBe(
      'kept',
    );
    expect(await page.locator('#turns tr[aria-selected="true"]').getAttribute('data-id')).toBe(selected);
    expect(await page.locator('#state').textContent()).toMatch(/ turns$/);
    // Idle, the refresh asks the list of the session's newest requests (a 304), not the session
    // again: its answer carries every turn's prompt.
    let sessionReads = 0;
    const onRequest = (r: { url(): string }) => {
      if (new URL(r.url()).pathname === '/inspect/api/session') sessionReads++;
    };
    page.on('request', onRequest);
    await refreshed(page, '/inspect/api/requests', 3);
    page.off('request', onRequest);
    expect(sessionReads).toBeLessThanOrEqual(1);
  });
});
