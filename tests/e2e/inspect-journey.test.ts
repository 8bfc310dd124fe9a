/**
 * The inspector as a user reaches for it after a real agent session went wrong (docs/inspect.md,
 * "The page"): an OpenAI Agents SDK agent (the devDependency) through toolproof against the
 * simulator playing a leaky model, its instructions stamped with the time (a prompt prefix that
 * breaks every turn), a call re-asked, and a backend that cuts its stream. In headless Chromium,
 * keyboard only, dark and light: the failed turn from the list, its failed attempts, on to its
 * session by Tab and Enter with the turn followed selected there, the prefix break named, back to
 * the re-asked turn and its feedback. Screenshots are kept as artifacts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, OpenAIProvider, Runner, tool } from '@openai/agents';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { type Stack, startStack } from '../server/stack.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts', 'inspect-journey');
const SESSION = 'agent-run-1';

/** The model, turn by turn: a leaked call, a call missing its argument then fixed, a cut stream. */
const MODEL = [
  {
    raw: 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
  },
  { call: [{ name: 'get_weather', arguments: {} }] },
  { call: [{ name: 'get_weather', arguments: { city: 'Lyon' } }] },
  { say: 'Both are sunny.', dieAfterChunks: 1 },
];

let stack: Stack;
let browser: Browser;
let close: (() => Promise<void>) | undefined;
let agentError = '';

describe.skipIf(!chromiumAvailable)('the inspector after an agent session went wrong, keyboard only', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    stack = await startStack({ sim: { personality: 'vllm', promptTokensDetails: true, scenario: MODEL } });
    const client = new OpenAI({
      baseURL: stack.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-conversation-id': SESSION },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: false }),
      tracingDisabled: true,
    });
    const agent = new Agent({
      name: 'weather',
      // What a user's agent does: today's date and time in its instructions.
      instructions: () => `Answer with the tools. Now: ${new Date().toISOString()}`,
      model: 'sim',
      tools: [
        tool({
          name: 'get_weather',
          description: 'Current weather for a city',
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }) => `${city}: sunny, 21C`,
        }),
      ],
    });
    try {
      const result = await runner.run(agent, 'Weather in Paris and Lyon?', { stream: true });
      for await (const _ of result.toTextStream());
      await result.completed;
    } catch (err) {
      agentError = (err as Error).message;
    }
    ({ browser, close } = await openPage());
  }, 60_000);

  afterAll(async () => {
    await close?.();
    await stack?.close();
  });

  it('the agent met the cut stream (what its user saw)', () => {
    expect(agentError).toContain('closed the stream');
  });

  for (const scheme of ['dark', 'light'] as const) {
    it(`${scheme}: from the failed turn in the list to its session and back to the re-asked turn`, async () => {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 860 },
        colorScheme: scheme,
      });
      const page: Page = await context.newPage();
      const shot = (name: string) =>
        page.screenshot({ path: join(ARTIFACTS, `${name}-${scheme}.png`), fullPage: true });
      const focused = () => page.evaluate<string>('document.activeElement?.textContent?.trim() ?? ""');
      try {
        await page.goto(`${stack.origin}/inspect`);
        await page.locator('#requests tr[data-id]').first().waitFor();
        await shot('list');
        // The newest turn, selected as the list opens, is the one that went wrong.
        const row = page.locator('#requests tr[aria-selected="true"]');
        expect(await row.locator('.badge').first().textContent()).toBe('failed');
        await page.keyboard.press('Enter');
        await page.locator('#request-error').waitFor();
        expect(await page.locator('#request-error').textContent()).toContain('closed the stream');
        // Its attempts: the cut one, and the one sent again, cut too.
        const failedAttempts = page.locator('section.attempt .attempt-error');
        expect(await failedAttempts.count()).toBe(2);
        await shot('failed-turn');
        // Tab goes on into the request: its session's link first (it went to the page's header,
        // and Enter there back to the list).
        await page.keyboard.press('Tab');
        expect(await focused()).toBe(`h:${SESSION}`);
        await page.keyboard.press('Enter');
        await page.locator('h1', { hasText: 'Session' }).waitFor();
        const turns = page.locator('tbody tr[data-id]');
        expect(await turns.count()).toBe(4);
        // The turn followed here is the one selected (it was the first turn: Enter opened that).
        const selected = page.locator('tbody tr[aria-selected="true"]');
        expect(await selected.locator('td').first().textContent()).toBe('4');
        // The prefix break named, where the instructions' time changed.
        const prefix = await turns.nth(1).textContent();
        expect(prefix).toContain('changed in messages[0] of the prompt sent');
        expect(await turns.nth(1).locator('mark.first-change').count()).toBeGreaterThan(0);
        await shot('session');
        // Up to the re-asked turn, and into it: the feedback sent to the model.
        await page.keyboard.press('k');
        await page.keyboard.press('k');
        expect(await selected.locator('td').first().textContent()).toBe('2');
        await page.keyboard.press('Enter');
        const feedback = page.locator('.feedback-text');
        await feedback.waitFor();
        expect(await feedback.textContent()).toContain('`city` is required');
        await shot('retried-turn');
        // Escape goes back to the session, the turn still selected.
        await page.keyboard.press('Escape');
        await page.locator('h1', { hasText: 'Session' }).waitFor();
        expect(await selected.locator('td').first().textContent()).toBe('2');
      } finally {
        await context.close();
      }
    });
  }
});
