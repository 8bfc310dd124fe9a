/**
 * The inspector page on a request in flight (docs/inspect.md, "The page"), in headless Chromium:
 * a model that stopped mid-answer (an upstream holding its stream) shows what it wrote so far and
 * what the client received so far, headed "so far", refreshed while it stays in flight, then the
 * whole answer once the stream ends, the section the reader opened still open. Skipped only where
 * Chromium is absent outside CI.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { type RunningProxy, startProxy } from '../support/harness.js';
import { type HeldStream, readUntil, startHeldStream } from '../support/held-stream.js';

let upstream: HeldStream;
let proxy: RunningProxy;
/** Closes this file's browser context (the browser is the worker's: tests/support/browser.ts). */
let close: (() => Promise<void>) | undefined;
let page: Page;

describe.skipIf(!chromiumAvailable)('the inspector page on a request in flight', () => {
  beforeAll(async () => {
    upstream = await startHeldStream(['Hello, ', 'the first half'], [', and the rest.']);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    ({ page, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    upstream?.release();
    await close?.();
    await proxy?.close();
    await upstream?.close();
  });

  it('shows the text so far while the model writes, then the whole answer', async () => {
    const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'held-page' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'Tell me' }], stream: true }),
    });
    const reader = await readUntil(res, 'the first half');

    await page.goto(`${proxy.origin}/inspect#/r/held-page`);
    const modelText = page.locator('#model-wrote pre.text');
    const clientText = page.locator('#client-received pre.text');
    await modelText.waitFor();
    expect(await page.locator('#state').textContent()).toBe('in flight');
    expect(await modelText.textContent()).toBe('Hello, the first half');
    expect(await clientText.textContent()).toBe('Hello, the first half');
    expect(await page.locator('#model-wrote h3').textContent()).toMatch(/so far$/);
    expect(await page.locator('#client-received h3').textContent()).toBe('client received · so far');
    // The attempt's response, opened by the reader, shows the events read so far.
    const response = page.locator('section.attempt details').nth(1);
    expect(await response.locator('summary').textContent()).toMatch(/^response so far \(in flight\)/);
    await response.locator('summary').click();
    expect(await response.locator('pre').textContent()).toContain('"content":"the first half"');
    // Refreshed while in flight (every second): still the text so far, the section still open.
    await page.waitForTimeout(1300);
    expect(await modelText.textContent()).toBe('Hello, the first half');
    expect(await response.evaluate((d) => d.hasAttribute('open'))).toBe(true);

    upstream.release();
    while (!(await reader.read()).done) {
      // the rest of the answer
    }
    await expect
      .poll(() => modelText.textContent(), { timeout: 10_000 })
      .toBe('Hello, the first half, and the rest.');
    await expect.poll(() => page.locator('#state').textContent(), { timeout: 5000 }).toBe('');
    expect(await clientText.textContent()).toBe('Hello, the first half, and the rest.');
    expect(await page.locator('#model-wrote h3').textContent()).not.toMatch(/so far/);
    expect(await page.locator('h1 [data-outcome]').getAttribute('data-outcome')).toBe('clean');
    const ended = page.locator('section.attempt details').nth(1);
    expect(await ended.evaluate((d) => d.hasAttribute('open'))).toBe(true);
    expect(await ended.locator('summary').textContent()).toBe('response');
    expect(await ended.locator('pre').textContent()).toContain('and the rest.');
  });

  it('keeps the section the reader opened when a reasoning section appears above it as the text grows', async () => {
    const thinking = await startHeldStream([], [{ reasoning_content: 'Let me think.' }, 'Done.']);
    const behind = await startProxy({ TOOLPROOF_UPSTREAM_URL: thinking.url });
    try {
      const res = fetch(`${behind.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'held-thinking' },
        body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'Think' }], stream: true }),
      }).then((r) => r.text());
      await thinking.holding;
      await page.goto(`${behind.origin}/inspect#/r/held-thinking`);
      const response = page.locator('section.attempt details').nth(1);
      await response.waitFor();
      expect(await page.locator('#model-wrote pre.text').textContent()).toBe('(in flight: no text yet)');
      await response.locator('summary').click();
      thinking.release();
      await res;
      await expect
        .poll(() => page.locator('#model-wrote pre.text').textContent(), { timeout: 10_000 })
        .toBe('Done.');
      await expect.poll(() => page.locator('#state').textContent(), { timeout: 5000 }).toBe('');
      // The panels' reasoning sections came in above it: the response is still the one open.
      expect(await page.locator('#model-wrote details summary').textContent()).toBe('reasoning');
      expect(await page.locator('main details[open]').count()).toBe(1);
      expect(await response.evaluate((d) => d.hasAttribute('open'))).toBe(true);
    } finally {
      await behind.close();
      await thinking.close();
    }
  });
});
