/**
 * The inspector page's state in its address (docs/inspect.md, "The page"): the request, the
 * attempt picked in the side-by-side view, the session and the list's filters. The attempt pick
 * went back to the last attempt at every refresh of a request in flight (every second) and at a
 * reload, so a user reading the model's first, cut attempt while the second streamed lost it each
 * second, and a link they shared showed the other attempt. Headless Chromium (Debian's
 * /usr/bin/chromium, playwright-core).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from '../server/stack.js';
import { chromiumAvailable, openPage, refreshed } from '../support/browser.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { chunkEvent, startProxy } from '../support/harness.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');

let stack: Stack;
let close: (() => Promise<void>) | undefined;
let page: Page;

describe.skipIf(!chromiumAvailable)("the inspector page's state in its address", () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({ sim: { personality: 'vllm' } });
    ({ page, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  it('keeps the attempt picked through in-flight refreshes, a reload, Back and a shared link', async () => {
    // A stream the upstream cut before any answer (attempt 1), sent again (attempt 2), which then
    // holds: the request stays in flight, its view refreshed every second.
    let calls = 0;
    const held = new Set<import('node:http').ServerResponse>();
    const upstream = await startFakeUpstream((_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunkEvent({ role: 'assistant', content: '' }, null, 'chatcmpl-cut', 'sim'));
      if (++calls === 1) setTimeout(() => res.socket?.destroy(), 20);
      else held.add(res);
    });
    const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    const ctl = new AbortController();
    const sent = fetch(`${proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      signal: ctl.signal,
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'picked-1',
        'x-claude-code-session-id': 'address-session',
      },
      body: JSON.stringify({
        model: 'm1',
        messages: [{ role: 'user', content: 'Hello?' }],
        tools: [weatherTool],
        stream: true,
      }),
    })
      .then((r) => r.text())
      .catch(() => '');
    await expect.poll(() => held.size, { timeout: 10_000 }).toBe(1);
    const origin = proxy.origin;
    try {
      await page.goto(`${origin}/inspect#/r/picked-1`);
      const pick = page.locator('#attempt-pick button');
      await pick.nth(1).waitFor();
      expect(await page.locator('#state').textContent()).toBe('in flight');
      expect(await page.locator('#model-wrote').getAttribute('data-attempt')).toBe('2');

      await pick.nth(0).click();
      await page.locator('#model-wrote[data-attempt="1"]').waitFor();
      expect(new URL(page.url()).hash).toBe('#/r/picked-1?attempt=1');
      // Two refreshes of the request in flight: attempt 1 is still the one shown, its button pressed.
      await refreshed(page, '/inspect/api/requests/picked-1', 2);
      expect(await page.locator('#state').textContent()).toBe('in flight');
      expect(await page.locator('#model-wrote').getAttribute('data-attempt')).toBe('1');
      expect(await page.locator('#model-wrote').getAttribute('data-fate')).toBe('failed');
      expect(await pick.nth(0).getAttribute('aria-pressed')).toBe('true');
      expect(await pick.nth(1).getAttribute('aria-pressed')).toBe('false');

      // A reload shows the same attempt.
      await page.reload();
      await page.locator('#model-wrote').waitFor();
      expect(await page.locator('#model-wrote').getAttribute('data-attempt')).toBe('1');
      expect(await pick.nth(0).getAttribute('aria-pressed')).toBe('true');

      // To its session and Back: the same attempt; Forward: the session again.
      await page.locator('.meta a[href^="#/s/"]').click();
      await page.locator('#turns').waitFor();
      await page.goBack();
      await page.locator('#model-wrote[data-attempt="1"]').waitFor();
      expect(new URL(page.url()).hash).toBe('#/r/picked-1?attempt=1');
      await page.goForward();
      await page.locator('#turns').waitFor();
      await page.goBack();

      // Picking the other one writes it in place.
      await page.locator('#attempt-pick button').nth(1).click();
      await page.locator('#model-wrote[data-attempt="2"]').waitFor();
      expect(new URL(page.url()).hash).toBe('#/r/picked-1?attempt=2');
      await page.locator('#attempt-pick button').nth(0).click();
      await page.locator('#model-wrote[data-attempt="1"]').waitFor();
      await page.screenshot({ path: join(ARTIFACTS, 'attempt-in-address.png'), fullPage: true });
      // The request ends (the client leaves): the page says so, the pick still there.
      ctl.abort();
      await sent;
      await expect.poll(() => page.locator('#state').textContent(), { timeout: 10_000 }).toBe('');
      expect(await page.locator('#model-wrote').getAttribute('data-attempt')).toBe('1');
    } finally {
      ctl.abort();
      for (const res of held) res.destroy();
    }

    // The link, opened by someone else once the request ended: the same attempt.
    const other = await openPage();
    try {
      await other.page.goto(`${origin}/inspect#/r/picked-1?attempt=1`);
      await other.page.locator('#model-wrote').waitFor();
      expect(await other.page.locator('#model-wrote').getAttribute('data-attempt')).toBe('1');
      // An attempt the request does not have shows its last.
      await other.page.goto(`${origin}/inspect#/r/picked-1?attempt=9`);
      await other.page.locator('#model-wrote[data-attempt="2"]').waitFor();
      await other.page.goto(`${origin}/inspect#/?outcome=failed`);
      await other.page.locator('#requests tbody tr[data-id="picked-1"]').waitFor();
      expect(await other.page.locator('select[name=outcome]').inputValue()).toBe('failed');
    } finally {
      await other.close();
      await proxy.close();
      await upstream.close();
    }
  });

  it("keeps the list's filters and a session through a reload", async () => {
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'Hello?' }] },
      { headers: { 'x-request-id': 'filtered-1', 'x-claude-code-session-id': 'address-session' } },
    );
    expect(res.choices[0]?.message.content).toBeTruthy();
    await page.goto(`${stack.origin}/inspect#/`);
    await page.locator('#requests tbody tr[data-id]').first().waitFor();
    await page.locator('select[name=outcome]').selectOption('clean');
    await expect.poll(() => new URL(page.url()).hash).toBe('#/?outcome=clean');
    await page.reload();
    await page.locator('#requests tbody tr[data-id="filtered-1"]').waitFor();
    expect(await page.locator('select[name=outcome]').inputValue()).toBe('clean');

    await page.goto(`${stack.origin}/inspect#/s/h:address-session`);
    await page.locator('#turns tbody tr[data-id="filtered-1"]').waitFor();
    await page.reload();
    await page.locator('#turns tbody tr[data-id="filtered-1"]').waitFor();
  });
});
