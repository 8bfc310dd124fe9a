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

/** A headless browser and one page of the size the screenshots use; dialogs are dismissed. */
export async function openPage(): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('dialog', (d) => void d.dismiss());
  return { browser, page };
}
