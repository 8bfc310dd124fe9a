/**
 * Keyboard only, the selected row stays in sight: the page's header is sticky, and a row `k`
 * selected above the window was scrolled to the window's top edge, under the header (43 px of a
 * 29 px row on a desktop, more on a phone where the header wraps), so the reader moving up a long
 * list saw no selection at all (WCAG 2.2 "focus not obscured"). The header's height is now the
 * page's scroll padding. Headless Chromium; a screenshot is kept in tests/artifacts/inspect/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { chromiumAvailable, openPage } from '../support/browser.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');
const ROWS = 60;
let stack: Stack;

describe.skipIf(!chromiumAvailable)('the selected row is never under the sticky header', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({});
    for (let i = 0; i < ROWS; i++)
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: `hi ${i}` }],
      });
  });
  afterAll(async () => {
    await stack?.close();
  });

  for (const [name, viewport] of [
    ['desktop', { width: 1280, height: 600 }],
    ['phone', { width: 390, height: 640 }],
  ] as const)
    it(`${name}: down a long list with j, back up with k, the selected row below the header`, async () => {
      const { page, close } = await openPage();
      try {
        await page.setViewportSize(viewport);
        await page.goto(`${stack.origin}/inspect`);
        await page
          .locator('tr[data-id]')
          .nth(ROWS - 1)
          .waitFor();
        await page.locator('body').click({ position: { x: 5, y: 5 } });
        for (let i = 0; i < 40; i++) await page.keyboard.press('j');
        const seen: string[] = [];
        for (let i = 0; i < 30; i++) {
          await page.keyboard.press('k');
          // The selected row whole in the window, below the header.
          const [top, bottom, header, height] = await page.evaluate<number[]>(`(() => {
            const r = document.querySelector('tr[aria-selected="true"]').getBoundingClientRect();
            const h = document.querySelector('body > header').getBoundingClientRect();
            return [r.top, r.bottom, h.bottom, innerHeight];
          })()`);
          seen.push(`${Math.round(top!)}/${Math.round(header!)}`);
          expect(top, seen.join(' ')).toBeGreaterThanOrEqual(header! - 1);
          expect(bottom, seen.join(' ')).toBeLessThanOrEqual(height! + 1);
        }
        await page.screenshot({ path: join(ARTIFACTS, `focus-under-header-${name}.png`) });
      } finally {
        await close();
      }
    });
});
