/**
 * The inspector as a user reads a real session through the simulator (glass41): things a user
 * found wrong in headless Chromium, each checked where they showed.
 * - A session's view wrote "null" under its heading (a null child handed to the DOM's own
 *   replaceChildren, which writes it as text).
 * - A non-streamed Responses answer carries `"error": null` (OpenAI's shape): it was read as an
 *   error, so the client's side showed "error: null" and no text, the model's text was marked as
 *   never passed on, and a previous_response_id chain split into one session per turn (a run is
 *   marked by that text: capture/runs.ts).
 * - vLLM reports no cached tokens without --enable-prompt-tokens-details: a finished request's
 *   cached count and a session turn's cached ratio read '–', the page's mark for "in flight".
 * - A request in flight read '…' for its duration, in the list and on its page: a request stuck
 *   for minutes looked like one that had just begun. It now says how long it has run so far, by
 *   the server's clock (its answers' Date header), counted on at each poll (a 304 included).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

let stack: Stack;
let page: Page;
let close: () => Promise<void>;

const json = (scenario: unknown, more: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-sim-scenario': JSON.stringify(scenario),
  ...more,
});
const responses = async (body: unknown, scenario: unknown) =>
  (await (
    await fetch(`${stack.url}/responses`, {
      method: 'POST',
      headers: json(scenario),
      body: JSON.stringify(body),
    })
  ).json()) as { id: string };

describe.skipIf(!chromiumAvailable)('a real session in the page', () => {
  beforeAll(async () => {
    // vLLM as it runs by default: no prompt_tokens_details, so no cached count.
    stack = await startStack({ sim: { personality: 'vllm' } });
    const first = await responses({ model: 'sim', input: 'Hi there' }, { say: 'Hello from Responses.' });
    await responses(
      { model: 'sim', input: 'And again?', previous_response_id: first.id },
      { say: 'Second answer.' },
    );
    for (const say of ['One.', 'Two.']) {
      const res = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: json({ say }, { 'x-session-affinity': 'chat-run' }),
        body: JSON.stringify({
          model: 'sim',
          messages: [{ role: 'user', content: `weather ${say}` }],
          tools: [weatherTool],
        }),
      });
      await res.text();
    }
    ({ page, close } = await openPage());
  });
  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  const sessions = async () =>
    (
      (await (await fetch(`${stack.origin}/inspect/api/sessions`)).json()) as {
        sessions: Array<{ session: string; requests: number }>;
      }
    ).sessions;

  it('a non-streamed Responses chain is one session; each turn shows the text the client received', async () => {
    const chain = (await sessions()).filter((s) => s.session.startsWith('o:'));
    expect(chain).toEqual([expect.objectContaining({ requests: 2 })]);
    const list = (await (await fetch(`${stack.origin}/inspect/api/requests`)).json()) as {
      requests: Array<{ id: string; api: string }>;
    };
    const second = list.requests.find((r) => r.api === 'responses')!;
    await page.goto(`${stack.origin}/inspect#/r/${encodeURIComponent(second.id)}`);
    await page.waitForSelector('#client-received');
    const received = await page.textContent('#client-received');
    expect(received).toContain('Second answer.');
    expect(received).not.toContain('error');
    // Passed on: nothing of the model's text is marked as left out.
    expect(await page.locator('#model-wrote mark').count()).toBe(0);
    expect(await page.textContent('#model-wrote .finish')).toContain('stop');
    expect(await page.textContent('#client-received .finish')).toContain('completed');
  });

  it('a session view: no stray "null", and unreported cached tokens read ? (not in flight)', async () => {
    await page.goto(`${stack.origin}/inspect#/s/${encodeURIComponent('h:chat-run')}`);
    await page.waitForSelector('#turns tbody tr[data-id]');
    // What follows the heading is the session's line, not a stray "null".
    const after = await page.evaluate<string>("document.querySelector('main h1').nextSibling.textContent");
    expect(after).not.toBe('null');
    expect(await page.textContent('main')).not.toContain('Sessionnull');
    const rows = page.locator('#turns tbody tr');
    expect(await rows.count()).toBe(2);
    for (const row of await rows.all()) {
      const cells = await row.locator('td').allTextContents();
      expect(cells[4]).toMatch(/^\? \/ \d+$/); // cached / prompt
      expect(cells[5]).toBe('?'); // cached ratio
    }
    // The list and the request say the same.
    await page.goto(`${stack.origin}/inspect#/`);
    await page.waitForSelector('tbody tr[data-id]');
    const cached = await page.locator('tbody tr[data-id] td:nth-child(8)').allTextContents();
    expect(cached.every((c) => c === '?')).toBe(true);
    const title = await page.locator('tbody tr[data-id] td:nth-child(8)').first().getAttribute('title');
    expect(title).toContain('--enable-prompt-tokens-details');
  });

  // Last: its request (the client leaves) would be listed among the others'.
  it('a request in flight says how long it has run so far, in the list and on its page', async () => {
    const ac = new AbortController();
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: json({ say: 'slow '.repeat(400), chunkDelayMs: 50 }),
      body: JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'a slow one' }],
        stream: true,
      }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    try {
      const id = res.headers.get('x-request-id')!;
      await page.goto(`${stack.origin}/inspect#/`);
      const row = page.locator(`tbody tr[data-id="${id}"]`);
      await expect.poll(() => row.locator('td').last().textContent()).toMatch(/^\d+ s so far$/);
      // It runs on: later polls (304s: nothing new in the list) say more.
      await expect
        .poll(async () => Number.parseInt((await row.locator('td').last().textContent()) ?? '', 10), {
          timeout: 8000,
        })
        .toBeGreaterThanOrEqual(2);
      await page.goto(`${stack.origin}/inspect#/r/${encodeURIComponent(id)}`);
      await expect.poll(() => page.locator('#duration').textContent()).toMatch(/^\d+ s so far$/);
    } finally {
      ac.abort();
      await reader.read().catch(() => undefined);
    }
  });
});
