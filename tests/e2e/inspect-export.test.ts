/**
 * A bug report in one click (docs/inspect.md, "A bug report"): one request, or one session, as a
 * single JSON file, downloaded from the page (a real download in headless Chromium, Debian's
 * /usr/bin/chromium) and read from the API: the client's request, every attempt, the decisions,
 * what the client received, and never a credential (the client's key, its cookie, the key
 * toolproof sends the backend).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from '../server/stack.js';
import { chromiumAvailable, openPage } from '../support/browser.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');
const CLIENT_KEY = 'sk-client-export-secret-1';
const UPSTREAM_KEY = 'sk-upstream-export-secret-2';
const COOKIE = 'sid=cookie-export-secret-3';
const SECRETS = [CLIENT_KEY, UPSTREAM_KEY, 'cookie-export-secret-3'];
const SESSION = 'export-session';

interface Exported {
  format: string;
  version: number;
  exportedAt: string;
  session?: { session: string; turns: Array<{ summary: { id: string }; prefix: unknown }> };
  requests: Array<{
    record: {
      id: string;
      clientRequest: { headers: Record<string, string>; body: { text: string } };
      upstreamAttempts: Array<{ request: { text: string }; error?: { code: string } }>;
      decisions: Array<{ kind: string; detail?: string }>;
      clientResponse: { body: { text: string } };
    };
    modelWrote: Array<{ calls: Array<{ arguments: string }> }>;
    clientReceived: { calls: Array<{ arguments: string }> };
    curl: string[];
    diffBase: { against: string | null };
  }>;
}

let stack: Stack;
let context: BrowserContext;
let page: Page;
let closeContext: (() => Promise<void>) | undefined;

const auth = { authorization: `Bearer ${CLIENT_KEY}` };

async function turn(id: string, messages: unknown[], scenario: unknown[], session = SESSION): Promise<void> {
  const res = await fetch(`${stack.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...auth,
      cookie: COOKIE,
      'x-request-id': id,
      'x-claude-code-session-id': session,
      'x-sim-scenario': JSON.stringify(scenario),
    },
    body: JSON.stringify({ model: 'sim', messages, tools: [weatherTool] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

describe.skipIf(!chromiumAvailable)('a request or a session as one JSON file', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({
      env: { TOOLPROOF_API_KEYS: CLIENT_KEY, TOOLPROOF_UPSTREAM_API_KEY: UPSTREAM_KEY },
    });
    const first = [{ role: 'user', content: 'Weather in Paris?' }];
    // A corrective retry: the model's first call lacks the required city.
    await turn('export-1', first, [
      { call: [{ name: 'get_weather', arguments: { town: 'Paris' } }] },
      { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    ]);
    const second = [
      ...first,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 C' },
    ];
    await turn('export-2', second, [{ say: 'It is sunny in Paris.' }, { say: 'It is sunny in Paris.' }]);
    const { browser, close } = await openPage();
    await close();
    context = await browser.newContext({
      viewport: { width: 1280, height: 860 },
      httpCredentials: { username: 'me', password: CLIENT_KEY },
      acceptDownloads: true,
    });
    page = await context.newPage();
    closeContext = () => context.close();
  }, 60_000);

  afterAll(async () => {
    await closeContext?.();
    await stack?.close();
  });

  const api = async (path: string, headers: Record<string, string> = auth) =>
    fetch(`${stack.origin}/inspect/api${path}`, { headers });

  it('exports one request from the API: the whole record, no credential, as an attachment', async () => {
    const res = await api('/requests/export-1/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('content-disposition')).toBe(
      'attachment; filename="toolproof-request-export-1.json"',
    );
    const text = await res.text();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const file = JSON.parse(text) as Exported;
    expect(file.format).toBe('toolproof-inspect-export');
    expect(file.version).toBe(1);
    expect(Date.parse(file.exportedAt)).toBeGreaterThan(0);
    expect(file.session).toBeUndefined();
    expect(file.requests).toHaveLength(1);
    const [one] = file.requests;
    // What the page shows: the client's request, both attempts, the re-ask and its feedback, the answer.
    expect(one!.record.id).toBe('export-1');
    expect(one!.record.clientRequest.headers.authorization).toBe('[redacted]');
    expect(one!.record.clientRequest.headers.cookie).toBe('[redacted]');
    expect(one!.record.clientRequest.body.text).toContain('Weather in Paris?');
    expect(one!.record.upstreamAttempts).toHaveLength(2);
    expect(one!.modelWrote[0]!.calls[0]!.arguments).toContain('town');
    expect(one!.clientReceived.calls[0]!.arguments).toContain('city');
    const reask = one!.record.decisions.find((d) => d.kind === 'retry-feedback');
    expect(reask?.detail).toMatch(/city/);
    expect(one!.curl).toHaveLength(2);
    expect(one!.curl[0]).toContain('${TOOLPROOF_UPSTREAM_API_KEY:?');
    expect(one!.diffBase.against).toBe('client');
    // The same data as the request's own answer (less its cursor).
    const whole = (await (await api('/requests/export-1')).json()) as Record<string, unknown>;
    const { cursor: _cursor, ...rest } = whole;
    expect(one).toEqual(rest);

    // Behind the key like the rest of the API; an unknown request is a 404.
    expect((await api('/requests/export-1/export', {})).status).toBe(401);
    expect((await api('/requests/nope/export')).status).toBe(404);
    // A client's own id of 128 characters (past the router's 100-character parameters).
    const long = `x${'0123456789abcdef'.repeat(8)}`.slice(0, 128);
    await turn(long, [{ role: 'user', content: 'Hi' }], [{ say: 'Hello.' }, { say: 'Hello.' }], 'another');
    const byLong = await api(`/requests/${long}/export`);
    expect(byLong.status).toBe(200);
    expect(byLong.headers.get('content-disposition')).toBe(
      `attachment; filename="toolproof-request-${long}.json"`.replace(
        long,
        long.slice(0, 100 - 'request-'.length),
      ),
    );
    expect(((await byLong.json()) as Exported).requests[0]!.record.id).toBe(long);
  });

  it('exports one session from the API: its turns and each request whole, in order', async () => {
    const res = await api(`/session/export?key=${encodeURIComponent(`h:${SESSION}`)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="toolproof-session-h_${SESSION}.json"`,
    );
    const text = await res.text();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const file = JSON.parse(text) as Exported;
    expect(file.requests.map((r) => r.record.id)).toEqual(['export-1', 'export-2']);
    expect(file.session?.session).toBe(`h:${SESSION}`);
    expect(file.session?.turns.map((t) => t.summary.id)).toEqual(['export-1', 'export-2']);
    // As the session view reads it: the second turn kept the first's prompt.
    const view = (await (await api(`/session?key=${encodeURIComponent(`h:${SESSION}`)}`)).json()) as {
      turns: unknown[];
    };
    expect(file.session?.turns).toEqual(view.turns);
    expect(file.session?.turns[1]?.prefix).toEqual({ kept: true });
  });

  it('downloads them from the page: one click on a request, one on its session', async () => {
    await page.goto(`${stack.origin}/inspect#/r/export-1`);
    const link = page.locator('.meta a.export');
    await link.waitFor();
    expect(await link.textContent()).toBe('download JSON');
    await page.screenshot({ path: join(ARTIFACTS, 'export-request.png') });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe('toolproof-request-export-1.json');
    const text = readFileSync(await download.path(), 'utf8');
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const file = JSON.parse(text) as Exported;
    expect(file.requests.map((r) => r.record.id)).toEqual(['export-1']);
    expect(file.requests[0]!.record.upstreamAttempts).toHaveLength(2);
    // The page is still there, the request still shown.
    expect(await page.locator('#request-id').textContent()).toBe('export-1');

    await page.locator('.meta a[href^="#/s/"]').click();
    const sessionLink = page.locator('.meta a.export');
    await page.locator('#turns').waitFor();
    const [sessionDownload] = await Promise.all([page.waitForEvent('download'), sessionLink.click()]);
    expect(sessionDownload.suggestedFilename()).toBe(`toolproof-session-h_${SESSION}.json`);
    const session = JSON.parse(readFileSync(await sessionDownload.path(), 'utf8')) as Exported;
    expect(session.requests.map((r) => r.record.id)).toEqual(['export-1', 'export-2']);
    expect(session.session?.turns).toHaveLength(2);
    // By keyboard too: the link takes the focus and Enter downloads.
    await sessionLink.focus();
    const [again] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    expect(again.suggestedFilename()).toBe(`toolproof-session-h_${SESSION}.json`);
    expect(await page.locator('#turns').count()).toBe(1);
  });
});
