/**
 * The inspector page end to end in headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core; never a downloaded browser): after a leak, a prose answer forced to a final
 * answer, a corrective retry and an upstream failure, the page lists each and shows each whole;
 * a session shows its three turns; model output with HTML and script stays text; a Messages or
 * Responses request's attempt is diffed against the client's request translated to chat
 * completions, so only toolproof's rewrites show as changed. Screenshots go
 * to tests/artifacts/inspect/ (gitignored). Skipped only where Chromium is absent outside CI.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { collectStream, type Stack, startStack, weatherTool, weatherTurn } from '../server/stack.js';
import { chatImageMessage } from '../support/images.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect');
/** Copy as curl is run as a user runs it, where curl is installed. */
const hasCurl = spawnSync('curl', ['--version']).status === 0;

const tools = [weatherTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const LEAKED =
  'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold?</b>';
/** A right-to-left override: shown as it is, "evil" would read "live" (and a zero-width space). */
const BIDI = ' \u202eevil\u202c\u200b';
const scenario = (v: unknown, extra: Record<string, string> = {}) => ({
  headers: { 'x-sim-scenario': typeof v === 'string' ? v : JSON.stringify(v), ...extra },
});

let stack: Stack;
let browser: Browser;
/** Closes this file's browser context (the browser is the worker's: tests/support/browser.ts). */
let close: (() => Promise<void>) | undefined;
let page: Page;
const ids: Record<string, string> = {};

describe.skipIf(!chromiumAvailable)('the inspector page in headless Chromium', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // A model whose backend is down: a port bound, then closed (nothing listens there).
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const downPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { models: { down: { upstream: `http://127.0.0.1:${downPort}/v1` } } },
    });
    const c = stack.client.chat.completions;
    ids.leak = (
      await c.create({ model: 'sim', messages: user, tools }, scenario({ raw: LEAKED })).withResponse()
    ).response.headers.get('x-request-id')!;
    const forced = await c
      .create(
        { model: 'sim', messages: user, tools, stream: true },
        scenario({ say: 'It is sunny in Paris.' }),
      )
      .withResponse();
    ids.final = forced.response.headers.get('x-request-id')!;
    await collectStream(forced.data);
    const named = { type: 'function' as const, function: { name: 'get_weather' } };
    ids.retry = (
      await c
        .create(
          { model: 'sim', messages: user, tools, tool_choice: named },
          scenario([
            { say: 'It is sunny.' },
            { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
          ]),
        )
        .withResponse()
    ).response.headers.get('x-request-id')!;
    // Re-asked for its prose, then the call leaked as text and recovered: retried and leak_recovered.
    ids.both = (
      await c
        .create(
          { model: 'sim', messages: user, tools, tool_choice: named },
          scenario([{ say: 'It is sunny.' }, { raw: LEAKED }]),
        )
        .withResponse()
    ).response.headers.get('x-request-id')!;
    // Two choices on llama-server (one a request): refused, then one request per choice.
    // Each choice's request is alike: the simulator answers them in turn.
    const answers = [{ say: 'Sunny.' }, { call: [{ name: 'get_weather', arguments: { city: 'Rome' } }] }];
    let answered = 0;
    stack.sim.setScenario(() => answers[Math.min(answered++, 1)]!);
    ids.choices = (
      await c.create({ model: 'sim', n: 2, messages: user, tools }).withResponse()
    ).response.headers.get('x-request-id')!;
    stack.sim.setScenario('demo');
    const failed = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'failed-1',
        'x-sim-scenario': JSON.stringify({ error: { status: 500, message: 'CUDA out of memory' } }),
      },
      body: JSON.stringify({ model: 'sim', messages: user, tools }),
    });
    expect(failed.status).toBe(500);
    ids.failed = 'failed-1';
    // Claude Code's shape: a long system prompt, the task, then a second system message, which
    // toolproof merges into the first (merged-system): one line of ~3,000 characters replaced.
    const merged = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'merged-system-1',
        'x-sim-scenario': JSON.stringify({ say: 'Done.' }),
      },
      body: JSON.stringify({
        model: 'sim',
        messages: [
          { role: 'system', content: `You are a coding agent. ${'Follow the rules. '.repeat(160)}End.` },
          ...user,
          { role: 'system', content: 'Answer in French.' },
        ],
      }),
    });
    expect(merged.status).toBe(200);
    ids.hostile = (
      await c
        .create(
          { model: 'sim', messages: user },
          // A header carries bytes: the simulator's base64 form for the override.
          {
            headers: {
              'x-sim-scenario': `b64:${Buffer.from(JSON.stringify({ say: HOSTILE + BIDI })).toString('base64')}`,
            },
          },
        )
        .withResponse()
    ).response.headers.get('x-request-id')!;
    // The same question through the Messages and Responses doors: their attempts go upstream as
    // chat completions, diffed against the client's request translated to chat completions.
    const params = weatherTool.function.parameters;
    const viaMessages = await fetch(`${stack.origin}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-request-id': 'messages-1',
        'x-sim-scenario': JSON.stringify({ say: 'It is sunny in Paris.' }),
      },
      body: JSON.stringify({
        model: 'sim',
        max_tokens: 200,
        messages: user,
        tools: [{ name: 'get_weather', description: 'Current weather for a city', input_schema: params }],
      }),
    });
    expect(viaMessages.status).toBe(200);
    ids.messages = 'messages-1';
    const viaResponses = await fetch(`${stack.url}/responses`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'responses-1',
        'x-sim-scenario': JSON.stringify({ say: 'It is sunny in Paris.' }),
      },
      body: JSON.stringify({
        model: 'sim',
        input: 'Weather in Paris?',
        tools: [{ type: 'function', name: 'get_weather', parameters: params }],
      }),
    });
    expect(viaResponses.status).toBe(200);
    ids.responses = 'responses-1';
    // Three turns of one agent conversation (Claude Code's session header).
    const session = { 'x-claude-code-session-id': 'agent-conversation-7' };
    const messages: Array<Record<string, unknown>> = [
      { role: 'user', content: 'Weather in Paris, then Rome?' },
    ];
    for (let turn = 0; turn < 3; turn++)
      await weatherTurn(stack, messages, scenario('tools', session).headers, { result: 'sunny, 21 C' });
    ({ browser, page, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  it('lists each request with its outcome', async () => {
    await page.goto(`${stack.origin}/inspect`);
    const row = (id: string) => page.locator(`tr[data-id="${id}"]`);
    await row(ids.failed!).waitFor();
    expect(await row(ids.leak!).locator('[data-outcome]').getAttribute('data-outcome')).toBe(
      'leak_recovered',
    );
    expect(await row(ids.final!).locator('[data-outcome]').getAttribute('data-outcome')).toBe('final_answer');
    expect(await row(ids.retry!).locator('[data-outcome]').getAttribute('data-outcome')).toBe('retried');
    expect(await row(ids.failed!).locator('[data-outcome]').getAttribute('data-outcome')).toBe('failed');
    // Tokens the upstream did not report (its 500 had no usage) read as unknown, never as 0 or
    // as nothing; a leak's (llama-server reports them) as numbers.
    const unknown = row(ids.failed!).locator('td.num[title="not reported by the upstream"]');
    expect(await unknown.allTextContents()).toEqual(['?', '?', '?']);
    expect(await row(ids.leak!).locator('td.num[title]').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'list.png') });
    // A request of several kinds shows a badge for each, the outcome first.
    const kinds = () =>
      row(ids.both!)
        .locator('[data-outcome]')
        .evaluateAll((b) => b.map((x) => x.getAttribute('data-outcome')));
    expect(await kinds()).toEqual(['retried', 'leak_recovered']);
    // Filters: the outcome select narrows the list, to every request of that kind.
    await page.selectOption('select[name=outcome]', 'failed');
    await expect.poll(() => page.locator('tr[data-id]').count()).toBe(1);
    expect(await page.locator('tr[data-id]').getAttribute('data-id')).toBe(ids.failed);
    await page.selectOption('select[name=outcome]', 'leak_recovered');
    await expect.poll(() => page.locator('tr[data-id]').count()).toBe(2);
    expect(await kinds()).toEqual(['retried', 'leak_recovered']);
  });

  it('a leak: the raw model text beside what the client received, the recovered call marked', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.leak}`);
    const marked = page.locator('#model-wrote mark.recovered');
    await marked.waitFor();
    expect(await marked.textContent()).toContain('<tool_call>');
    expect(await page.locator('#model-wrote pre.text').textContent()).toContain('Let me check.');
    expect(await page.locator('main').textContent()).not.toContain('null');
    expect(await page.locator('#client-received .call b').textContent()).toBe('get_weather');
    expect(await page.locator('#client-received pre.text').textContent()).not.toContain('<tool_call>');
    expect(await page.locator('#decisions li[data-kind="leak"]').textContent()).toMatch(/hermes.*recovered/);
    await page.screenshot({ path: join(ARTIFACTS, 'leak.png'), fullPage: true });
    // The README's picture (docs/inspect.png is a copy of this one).
    await page.setViewportSize({ width: 1100, height: 860 });
    await page.screenshot({
      path: join(ARTIFACTS, 'leak-top.png'),
      clip: { x: 0, y: 0, width: 1100, height: 520 },
    });
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('a prose answer forced to a final answer', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.final}`);
    await page.locator('#model-wrote .call b').waitFor();
    expect(await page.locator('#model-wrote .call b').textContent()).toBe('final_answer');
    expect(await page.locator('#client-received pre.text').textContent()).toBe('It is sunny in Paris.');
    expect(await page.locator('#decisions li[data-kind="forced"]').count()).toBe(1);
    // Forcing is decided while the first attempt is prepared: before it, not an "attempt 0".
    expect(await page.locator('#decisions li[data-kind="forced"] .when').textContent()).toMatch(
      /· before attempt 1$/,
    );
    await page.screenshot({ path: join(ARTIFACTS, 'final-answer.png'), fullPage: true });
  });

  it('a retry: the feedback text sent, both attempts', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.retry}`);
    const feedback = page.locator('#decisions .feedback-text');
    await feedback.waitFor();
    expect(await feedback.textContent()).toContain('do not answer in prose');
    expect(await page.locator('section.attempt').count()).toBe(2);
    // The second attempt's request shows the rewrite: the feedback message added.
    expect(await page.locator('section.attempt[data-attempt="2"] .diff .add').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('do not answer in prose')]),
    );
    await page.screenshot({ path: join(ARTIFACTS, 'retry.png'), fullPage: true });
  });

  it.each([
    ['messages', 'Messages'],
    ['responses', 'Responses'],
  ])(
    "a %s request's attempt is diffed against it translated to chat completions: only toolproof's rewrites differ",
    async (name) => {
      await page.goto(`${stack.origin}/inspect#/r/${ids[name]}`);
      const sent = page.locator('section.attempt[data-attempt="1"] details.sent');
      await sent.locator('.diff').waitFor();
      expect(await sent.locator('summary').textContent()).toContain('translated to chat completions');
      const added = (await sent.locator('.diff .add').allTextContents()).join('\n');
      const removed = await sent.locator('.diff .del').allTextContents();
      // The rewrites: the forced tool use (tool_choice required, the final_answer tool).
      expect(added).toContain('"required"');
      expect(added).toContain('final_answer');
      // The client's own question and tool are unchanged: not added, nothing of them removed
      // (at most a closing bracket that a new key after it moved).
      expect(added).not.toContain('Weather in Paris?');
      expect(added).not.toContain('get_weather');
      expect(
        removed.every((line) => /^-\s*[\]}],?$/.test(line)),
        removed.join('\n'),
      ).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, `diff-${name}.png`), fullPage: true });
    },
  );

  it('n choices asked one request each: each attempt names its choice, each choice beside what the model wrote for it', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.choices}`);
    const rows = page.locator('#choices [data-choice]');
    await rows.first().waitFor({ timeout: 5_000 });
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).locator('.client-received pre.text').textContent()).toBe('Sunny.');
    expect(await rows.nth(0).locator('.model-wrote .call b').textContent()).toBe('final_answer');
    expect(await rows.nth(1).locator('.client-received .call b').textContent()).toBe('get_weather');
    expect(await rows.nth(1).locator('.client-received pre.text').textContent()).toBe('');
    expect(await page.locator('section.attempt h3').allTextContents()).toEqual([
      expect.stringMatching(/^attempt 1 · every choice → .* · status 400$/),
      expect.stringMatching(/^attempt 2 · choice 0 → .* · status 200$/),
      expect.stringMatching(/^attempt 3 · choice 1 → .* · status 200$/),
    ]);
    await page.screenshot({ path: join(ARTIFACTS, 'choices.png'), fullPage: true });
  });

  it('a long line toolproof changed: what differs is marked, what the line shares with the one it replaced folded', async () => {
    await page.goto(`${stack.origin}/inspect#/r/merged-system-1`);
    const diff = page.locator('section.attempt[data-attempt="1"] details.sent .diff');
    await diff.waitFor();
    // The merged system prompt: the second message marked where the first one ended.
    const added = diff.locator('.add', { hasText: 'You are a coding' });
    expect(await added.count()).toBe(1);
    expect(await added.locator('mark.changed').textContent()).toBe('\\n\\nAnswer in French.');
    // Its ~2,900 characters shared with the line it replaced are folded to their ends.
    expect(await added.locator('.fold').textContent()).toMatch(/^ … \d+ unchanged characters … $/);
    expect((await added.textContent())!.length).toBeLessThan(300);
    const removed = diff.locator('.del', { hasText: 'You are a coding' });
    expect(await removed.locator('.fold').count()).toBe(1);
    expect(await removed.locator('mark.changed').count()).toBe(0);
    // Lines unlike each other (the second system message's own, gone) are shown whole.
    expect(await diff.locator('.del', { hasText: '"Answer in French."' }).locator('mark').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'diff-long-line.png'), fullPage: true });
  });

  it("a chat request's attempt is diffed against the client's request as it came", async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.final}`);
    const summary = page.locator('section.attempt[data-attempt="1"] details.sent summary');
    await summary.waitFor();
    expect(await summary.textContent()).toMatch(
      /^request sent, diffed against the client's request · \d+ lines added/,
    );
  });

  it("a forced request's diff shows every rewrite in the page, none below its box's fold", async () => {
    // The forced tool use's diff (the final_answer tool, then tool_choice "required" last): in a
    // box cut at 32em, tool_choice, the rewrite that decides what the model may answer, was
    // below the fold of the box's own scrollbar, and a retry's feedback message half out of sight.
    for (const [id, attempts] of [
      [ids.final!, 1],
      [ids.retry!, 2],
    ] as const) {
      await page.goto(`${stack.origin}/inspect#/r/${id}`);
      await expect.poll(() => page.locator('section.attempt').count()).toBe(attempts);
      await page.locator('section.attempt details.sent[open] .diff').first().waitFor();
      const boxes = await page
        .locator('section.attempt details.sent[open] .diff')
        .evaluateAll((all) => all.map((e) => ({ scroll: e.scrollHeight, client: e.clientHeight })));
      for (const box of boxes) expect(box.scroll, id).toBeLessThanOrEqual(box.client + 1);
    }
    await page.goto(`${stack.origin}/inspect#/r/${ids.final}`);
    const choice = page
      .locator('section.attempt[data-attempt="1"] .diff .add')
      .filter({ hasText: '"tool_choice": "required"' });
    await choice.scrollIntoViewIfNeeded();
    expect(await choice.isVisible()).toBe(true);
  });

  it.skipIf(!hasCurl)(
    "copy as curl (the c key): what lands on the clipboard, run by a shell, replays a Messages request's attempt against the backend",
    async () => {
      // A context of its own that may read the clipboard back, as the user's paste does.
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.origin });
      try {
        const p = await context.newPage();
        await p.goto(`${stack.origin}/inspect#/r/${ids.messages}`);
        const button = p.locator('section.attempt[data-attempt="1"] button.curl');
        await button.waitFor();
        await p.keyboard.press('c');
        await expect.poll(() => button.textContent()).toBe('copied');
        const copied = await p.evaluate<string>('navigator.clipboard.readText()');
        expect(copied).toBe(
          await p.locator('section.attempt[data-attempt="1"] details:last-of-type pre').textContent(),
        );
        const sent = (
          (await (await fetch(`${stack.origin}/inspect/api/requests/${ids.messages}`)).json()) as {
            record: { upstreamAttempts: Array<{ request: { text: string } }> };
          }
        ).record.upstreamAttempts[0]!.request.text;
        const before = stack.sim.requests.length;
        // Not synchronously: the simulator answering it runs in this process.
        const run = await promisify(execFile)('bash', ['-c', copied], { encoding: 'utf8', timeout: 10_000 });
        const replayed = stack.sim.requests.slice(before);
        expect(replayed).toHaveLength(1);
        // As chat completions, the body's bytes as sent.
        expect(replayed[0]!.path).toMatch(/\/chat\/completions$/);
        expect(replayed[0]!.rawBody).toBe(sent);
        expect(JSON.parse(run.stdout).object).toBe('chat.completion');
      } finally {
        await context.close();
      }
    },
  );

  it("an upstream failure: the failed attempt's error", async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.failed}`);
    const err = page.locator('section.attempt .attempt-error');
    await err.waitFor();
    expect(await err.textContent()).toContain('CUDA out of memory');
    expect(await page.locator('#request-id').textContent()).toBe('failed-1');
    expect(await page.locator('#request-error').textContent()).toContain('CUDA out of memory');
    await page.screenshot({ path: join(ARTIFACTS, 'failed.png'), fullPage: true });
  });

  it('an image the backend refused: the refused attempt with its error, the decision, the attempt sent again with the note', async () => {
    // A text-only backend of its own (the simulator's vision is per process).
    const blind = await startStack({ sim: { personality: 'llama-server', vision: false } });
    try {
      const res = await blind.client.chat.completions
        .create({ model: 'sim', messages: [chatImageMessage('What is this?')] })
        .withResponse();
      await page.goto(`${blind.origin}/inspect#/r/${res.response.headers.get('x-request-id')}`);
      const err = page.locator('section.attempt[data-attempt="1"] .attempt-error');
      await err.waitFor();
      expect(await err.textContent()).toContain('image input is not supported');
      expect(await page.locator('section.attempt[data-attempt="2"] .attempt-error').count()).toBe(0);
      const decisions = await page.locator('#decisions').textContent();
      expect(decisions).toContain('vision-refused');
      expect(decisions).toContain('sent again with a note');
      expect(
        (await page.locator('section.attempt[data-attempt="2"] .diff .add').allTextContents()).join('\n'),
      ).toContain('[image omitted: image/png, 300 B');
      // The image's 400 base64 characters, folded: their start, how many more and a hash.
      const removed = page.locator('section.attempt[data-attempt="2"] .diff .del');
      expect((await removed.allTextContents()).join('\n')).toMatch(
        /"data:image\/png;base64,[A-Za-z0-9+/]{40}… \(\d+ more base64 characters, #[0-9a-f]{8}\)/,
      );
      expect(Math.max(...(await removed.allTextContents()).map((l) => l.length))).toBeLessThan(200);
      await page.screenshot({ path: join(ARTIFACTS, 'vision-refused.png'), fullPage: true });
    } finally {
      await blind.close();
    }
  });

  it('a cancelled sign-in prompt shows a short page saying a key is needed; the key as the password opens the inspector', async () => {
    const key = 'sk-inspect-browser-0123456789';
    const keyed = await startStack({ env: { TOOLPROOF_API_KEYS: key }, apiKey: key });
    try {
      // A wrong key, then the prompt cancelled: playwright gives its credentials once and answers
      // the second challenge with a cancel (a user's Cancel), and Chromium shows the 401's body.
      // (A context with none fails the load in headless Chromium: ERR_INVALID_AUTH_CREDENTIALS.)
      const other = await browser.newContext({ httpCredentials: { username: 'me', password: 'wrong-key' } });
      const refused = await other.newPage();
      const res = await refused.goto(`${keyed.origin}/inspect`);
      expect(res?.status()).toBe(401);
      expect(res?.headers()['content-type']).toMatch(/^text\/html/);
      expect(await refused.locator('h1').textContent()).toBe('An API key is needed');
      expect(await refused.locator('body').textContent()).toContain('the password of the sign-in prompt');
      await other.close();
      const context = await browser.newContext({ httpCredentials: { username: 'me', password: key } });
      const signedIn = await context.newPage();
      expect((await signedIn.goto(`${keyed.origin}/inspect`))?.status()).toBe(200);
      await signedIn.locator('#main').waitFor();
      await context.close();
    } finally {
      await keyed.close();
    }
  });

  it('HTML and script in model output stay text; invisible characters show as their code points', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.hostile}`);
    const text = page.locator('#client-received pre.text');
    await text.waitFor();
    // No override left to reverse the text: each invisible character is its code point, marked.
    expect(await text.textContent()).toBe(`${HOSTILE} U+202EevilU+202CU+200B`);
    expect(await page.locator('#model-wrote pre.text').textContent()).toBe(
      `${HOSTILE} U+202EevilU+202CU+200B`,
    );
    expect(await text.locator('.ctl').allTextContents()).toEqual(['U+202E', 'U+202C', 'U+200B']);
    expect(
      await page
        .locator('#client-received img, #client-received script, #client-received b:text("bold?")')
        .count(),
    ).toBe(0);
    await page.waitForTimeout(200);
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
    await page.screenshot({ path: join(ARTIFACTS, 'escaped.png') });
  });

  it('a session: three turns of one conversation in order, with the cached ratio', async () => {
    await page.goto(`${stack.origin}/inspect#/sessions`);
    await page.locator('tr[data-key="h:agent-conversation-7"]').click();
    await page.locator('#turns tbody tr').first().waitFor();
    expect(await page.locator('#turns tbody tr').count()).toBe(3);
    const prefixes = await page.locator('#turns td.prefix').allTextContents();
    expect(prefixes).toEqual(['first turn', 'kept', 'kept']);
    await page.screenshot({ path: join(ARTIFACTS, 'session.png') });
  });

  it('is keyboard-friendly: j/k select, Enter opens, Escape goes back', async () => {
    await page.goto(`${stack.origin}/inspect`);
    await page.locator('tr[data-id]').first().waitFor();
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('j');
    const second = await page.locator('tr[data-id]').nth(1).getAttribute('data-id');
    expect(await page.locator('tr[aria-selected="true"]').getAttribute('data-id')).toBe(second);
    await page.keyboard.press('Enter');
    await page.locator('#request-id').waitFor();
    expect(await page.locator('#request-id').textContent()).toBe(second);
    await page.keyboard.press('Escape');
    await page.locator('tr[data-id]').first().waitFor();
  });

  it('an x-request-id in hand: `i` (from any view) focuses the request-id field, the id and Enter open it', async () => {
    await page.goto(`${stack.origin}/inspect#/r/${ids.failed}`);
    await page.locator('#request-id').waitFor();
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('i');
    await expect
      .poll(() =>
        page.evaluate<boolean>("document.activeElement?.matches('input[name=id]:focus-visible') === true"),
      )
      .toBe(true);
    await page.keyboard.type(ids.leak!);
    await page.keyboard.press('Enter');
    await expect
      .poll(() =>
        page
          .locator('#request-id')
          .textContent()
          .catch(() => null),
      )
      .toBe(ids.leak);
    // An id the capture does not hold says so in words.
    await page.goto(`${stack.origin}/inspect`);
    await page.locator('tr[data-id]').first().waitFor();
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('i');
    await page.keyboard.type('no-such-request');
    await page.keyboard.press('Enter');
    await expect
      .poll(() =>
        page
          .locator('main p.error')
          .textContent()
          .catch(() => null),
      )
      .toMatch(/^Request no-such-request: /);
  });

  it('a backend that cannot be reached: the attempt says so, with no TTFB (no first byte came)', async () => {
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'down-1' },
      body: JSON.stringify({ model: 'down', messages: user, tools }),
    });
    expect(res.status).toBe(502);
    await res.text();
    await page.goto(`${stack.origin}/inspect#/r/down-1`);
    const err = page.locator('section.attempt .attempt-error');
    await err.waitFor();
    expect(await err.textContent()).toContain('TP_ERR_UPSTREAM_UNREACHABLE');
    const meta = await page.locator('section.attempt .meta').textContent();
    expect(meta).toContain('TTFB none');
    expect(meta).toMatch(/total \d+(\.\d+)? m?s/);
  });
});
