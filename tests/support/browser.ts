/**
 * The browser of the page tests: Debian's chromium driven by playwright-core (never a downloaded
 * browser). `.ci/run` installs it; outside CI a box without it skips those tests.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable && process.env.CI)
  throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)`);

/**
 * The worker's headless browser: launched at the first page a worker opens and shared by the
 * files that worker runs after it (test files share a worker: vitest.config.ts isolate: false),
 * each in a browser context of its own (its own cookies, storage and credentials, as a fresh
 * browser has). A launch is ~1.3 s of CPU; until testspeed15 each of the four page files
 * launched its own. Playwright kills it when the worker exits.
 */
let shared: Promise<Browser> | undefined;

async function sharedBrowser(): Promise<Browser> {
  const launch = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  shared ??= launch();
  const browser = await shared;
  if (browser.isConnected()) return browser;
  shared = launch();
  return shared;
}

/**
 * A page of the size the screenshots use, in a context of its own in the worker's browser;
 * dialogs are dismissed. `close` closes that context (and every page in it), not the browser;
 * a context the file opens itself on `browser` is the file's to close.
 */
export async function openPage(): Promise<{ browser: Browser; page: Page; close: () => Promise<void> }> {
  const browser = await sharedBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.on('dialog', (d) => void d.dismiss());
  return { browser, page, close: () => context.close() };
}

/**
 * Resolves once the page has fetched `path` (an inspector API path) `times` more times: a view
 * that refreshes on a timer of its own has been drawn again at least `times - 1` times by then
 * (the next refresh is asked for only after a load is drawn). For a test that checks what a
 * refresh keeps: a fixed wait can see no refresh at all on a loaded box.
 */
export function refreshed(page: Page, path: string, times: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onResponse = (r: { url(): string }) => {
      if (new URL(r.url()).pathname !== path || ++seen < times) return;
      page.off('response', onResponse);
      resolve();
    };
    page.on('response', onResponse);
  });
}
