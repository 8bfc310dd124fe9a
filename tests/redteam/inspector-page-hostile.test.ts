import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { chunkEvent, proxyInFrontOf, sendCompletion } from '../support/harness.js';

const SCRIPT = (n: number) => `<img src=x onerror="window.__pwned=${n}"><script>window.__pwned=${n}</script>`;
const LONG = 'W'.repeat(5000);
const RLO = '\u202e';
/** The model: an override, markup, and an unbroken run far wider than any screen. */
const MODEL = `evil${RLO}${SCRIPT(1)}${LONG}`;
// Header values are bytes (a header cannot carry the override as such).
const SESSION = `javascript:window.__pwned=2//${SCRIPT(2)}${LONG}`;
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as {
    messages: Array<{ content?: unknown }>;
    stream?: boolean;
  };
  const said = String(body.messages[0]?.content ?? '');
  if (said === 'error') {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `bad request ${SCRIPT(3)}${RLO}${LONG}`, type: 'x' } }));
    return;
  }
  if (said === 'invent')
    return sendCompletion(
      res,
      {
        content: null,
        tool_calls: [
          {
            id: 't1',
            type: 'function',
            function: { name: `${SCRIPT(4)}${RLO}${LONG}`, arguments: `{"x":"${SCRIPT(5)}"}` },
          },
        ],
      },
      'tool_calls',
    );
  if (said === 'leak') {
    // A leaked call whose arguments carry markup and a long unbroken value (recovered, marked).
    const args = JSON.stringify({ city: `${SCRIPT(6)}${LONG}` });
    return sendCompletion(res, {
      content: `Sure.\n<tool_call>\n{"name": "get_weather", "arguments": ${args}}\n</tool_call>`,
    });
  }
  // A stream whose finish reason is markup.
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(
    chunkEvent({ role: 'assistant', content: `hi ${SCRIPT(7)}${LONG}` }) +
      chunkEvent({}, `${SCRIPT(8)}`) +
      'data: [DONE]\n\n',
  );
});

/** Closes this file's browser context (the browser is the worker's: tests/support/browser.ts). */
let close: (() => Promise<void>) | undefined;
let page: Page;
const ids = ['hostile-error', 'hostile-invent', 'hostile-leak', 'hostile-stream'];

describe.skipIf(!chromiumAvailable)('the inspector page with hostile text in every field', () => {
  beforeAll(async () => {
    const send = async (id: string, said: string, stream = false) => {
      const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': id,
          'x-claude-code-session-id': SESSION,
          'user-agent': `agent ${SCRIPT(9)}${LONG}`,
        },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: said }],
          tools: [weather],
          stream,
        }),
      });
      await res.text();
    };
    await send('hostile-error', 'error');
    await send('hostile-invent', 'invent');
    await send('hostile-leak', 'leak');
    await send('hostile-stream', 'stream', true);
    ({ page, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    await close?.();
  });

  /** Nothing ran, nothing became markup, and the page does not scroll sideways. */
  const expectInert = async (view: string) => {
    await page.waitForTimeout(100);
    expect(await page.evaluate('typeof window.__pwned'), view).toBe('undefined');
    expect(await page.locator('main img, main script, main svg, main iframe').count(), view).toBe(0);
    const overflow = (await page.evaluate(
      'document.documentElement.scrollWidth - window.innerWidth',
    )) as number;
    expect(overflow, `${view}: the page is ${overflow}px wider than the window`).toBeLessThanOrEqual(0);
  };

  it('is served with a Content-Security-Policy that allows only its own script', async () => {
    const res = await fetch(`${pair.proxy.origin}/inspect`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('the list', async () => {
    await page.goto(`${pair.proxy.origin}/inspect`);
    for (const id of ids) await page.locator(`tr[data-id="${id}"]`).waitFor();
    // Each row's link is the page's own hash route, never the session's text as a URL.
    for (const href of await page
      .locator('tbody a')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href'))))
      expect(href).toMatch(/^#\//);
    await expectInert('the list');
  });

  it.each(ids)('one request: %s', async (id) => {
    await page.goto(`${pair.proxy.origin}/inspect#/r/${id}`);
    await page.locator('#request-id').waitFor();
    expect(await page.locator('#request-id').textContent()).toBe(id);
    // Every panel opened: what is folded is shown too.
    await page.evaluate("for (const d of document.querySelectorAll('details')) d.open = true");
    await expectInert(id);
    // The override in the model's name stays in it: the outcome badge reads left to right,
    // after the model (its letters are not reversed onto the other side of the title).
    // (Browser code as text: the tests are type-checked without the DOM's types.)
    const order = (await page.evaluate(`(() => {
      const h1 = document.querySelector('h1');
      const badgeEl = h1.querySelector('.badge');
      const badge = badgeEl.getBoundingClientRect();
      // The title's text outside the badge, on the badge's own line.
      const rights = [];
      const walk = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        if (badgeEl.contains(n)) continue;
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of range.getClientRects())
          if (r.width > 0 && r.top < badge.bottom && r.bottom > badge.top) rights.push(r.right);
      }
      return { badgeLeft: badge.left, textRight: Math.max(...rights) };
    })()`)) as { badgeLeft: number; textRight: number };
    expect(order.badgeLeft).toBeGreaterThanOrEqual(order.textRight - 1);
  });

  it('a link whose id does not decode (%ZZ): the page says the request is not there', async () => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${pair.proxy.origin}/inspect#/r/%ZZ`);
    // Was an uncaught URIError: the page stayed at "Loading…".
    await page.locator('main p.error').waitFor({ timeout: 5_000 });
    expect(await page.locator('main p.error').textContent()).toContain('404');
    expect(errors).toEqual([]);
  });

  it('the sessions and the session', async () => {
    await page.goto(`${pair.proxy.origin}/inspect#/sessions`);
    await page.locator('#sessions tbody tr').first().waitFor();
    await expectInert('the sessions');
    await page.locator('#sessions tbody tr').first().click();
    await page.locator('#turns tbody tr').first().waitFor();
    expect(await page.locator('#turns tbody tr').count()).toBe(4);
    await expectInert('the session');
  });
});
