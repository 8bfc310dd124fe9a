/**
 * A re-asked turn in the inspector: the model's first call was invalid (a required argument
 * missing), toolproof re-asked and the second call was served. The side-by-side view showed only
 * the served attempt, the bad call left in attempt 1's collapsed raw response; a user asking
 * "what did the model write that was wrong" picks attempt 1 and sees it there, marked. Headless
 * Chromium (Debian's /usr/bin/chromium, playwright-core).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from '../server/stack.js';
import { chromiumAvailable, openPage } from '../support/browser.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');

let stack: Stack;
let close: (() => Promise<void>) | undefined;
let page: Page;

describe.skipIf(!chromiumAvailable)('a re-asked turn in the inspector', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({ sim: { personality: 'vllm' } });
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'reasked-1',
        'x-sim-scenario': JSON.stringify([
          { call: [{ name: 'get_weather', arguments: { town: 'Paris' } }] },
          { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
        ]),
      },
      body: JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [weatherTool],
      }),
    });
    expect(res.status).toBe(200);
    await res.text();
    ({ page, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  it("each attempt's model text in the side-by-side view, the re-asked call marked", async () => {
    await page.goto(`${stack.origin}/inspect#/r/reasked-1`);
    await page.locator('#model-wrote').waitFor();
    // The served attempt first, as before: its call beside the client's.
    expect(await page.locator('#model-wrote').getAttribute('data-attempt')).toBe('2');
    expect(await page.locator('#model-wrote .call pre').textContent()).toContain('"city"');
    const pick = page.locator('#attempt-pick button');
    expect(await pick.allTextContents()).toEqual(['attempt 1 · re-asked', 'attempt 2 · answered']);
    expect(await pick.nth(1).getAttribute('aria-pressed')).toBe('true');

    await pick.nth(0).click();
    const wrote = page.locator('#model-wrote[data-attempt="1"]');
    await wrote.waitFor();
    expect(await pick.nth(0).getAttribute('aria-pressed')).toBe('true');
    expect(await wrote.getAttribute('data-fate')).toBe('re-asked');
    // Why it was re-asked, in its heading; the bad call itself, marked invalid.
    expect(await wrote.locator('h3').first().textContent()).toMatch(
      /attempt 1, raw\) · re-asked: corrective retry/,
    );
    const bad = wrote.locator('.call.invalid');
    expect(await bad.count()).toBe(1);
    expect(await bad.locator('b').textContent()).toBe('get_weather');
    expect(await bad.locator('pre').textContent()).toContain('"town"');
    // What toolproof told the model was wrong, beside it.
    expect(await wrote.locator('.fate-feedback').textContent()).toMatch(/`city` is required but missing/);
    // The client's side is unchanged: the served call, never the bad one.
    expect(await page.locator('#client-received .call pre').textContent()).toContain('"city"');
    expect(await page.locator('#client-received').textContent()).not.toContain('town');
    await page.screenshot({ path: join(ARTIFACTS, 'reasked.png'), fullPage: true });

    await pick.nth(1).focus();
    await page.keyboard.press('Enter');
    await page.locator('#model-wrote[data-attempt="2"]').waitFor();
    expect(await page.locator('#model-wrote .call.invalid').count()).toBe(0);
  });
});
