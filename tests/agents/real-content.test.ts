/**
 * Issue 26: agent sessions with real content, run by the real CLIs through toolproof. Each ends
 * its task with every turn answered 2xx and the prefix contract holding across its turns.
 *
 * - Claude Code reads a PDF made here: its Read tool returns a `document` block inside
 *   `tool_result`; toolproof sends the extracted text upstream, and the scripted model answers
 *   with the number it finds in what it received (a number only the PDF's text holds).
 * - opencode and Qwen Code read the same PDF: their read tools attach it as a file (the launcher
 *   declares PDF input), and toolproof sends its text upstream.
 * - Claude Code reads an image on a model marked `vision: false` (the upstream gets the note, not
 *   the image) and on one marked `vision: true` (the image reaches the upstream).
 * - Claude Code reads an image on a text-only vLLM model toolproof was not told of (`vision: auto`):
 *   the backend refuses it once, toolproof sends the turn again with the note and remembers.
 * - pi (chat) reads an image: on a model toolproof's list marks `vision: true` the launcher
 *   declares image input and the PNG reaches the upstream; on `vision: false` pi is told the model
 *   is text-only and sends its own note instead.
 * - opencode's shell prints 2 MB (a binary dump: NUL bytes, a token each) into a 32k-window model
 *   with `maxToolResultTokens: 8000`: the result is cut under the cap, and the session finishes
 *   with no overflow. Without the cap every turn overflows; with the cut counting 3 characters a
 *   token for every character (24,000 NULs under an 8,000-token cap), opencode compacted after
 *   every run of the command and never finished.
 */
import { expect, it } from 'vitest';
import { textPdf } from '../support/pdf.js';
import { describeRun, runCase } from './lib/case.js';
import { describeAgents, expectPass, expectPrefix, tagContent } from './lib/suite.js';
import type { Task } from './lib/tasks.js';

const PDF_TASK: Task = {
  id: 'pdf',
  prompt: 'Read report.pdf and answer with the audit number it gives, only the number.',
  files: { 'report.pdf': textPdf(['Quarterly report', 'The audit number is 58213.']) },
  steps: [{ op: 'read', path: 'report.pdf' }],
  final: '58213',
  finalFrom: /audit number is (\d+)/,
  expect: {},
};

describeAgents('real content (issue 26)', () => {
  it('Claude Code reads a PDF: its text reaches the upstream, the answer is the number it holds', async ({
    task: t,
  }) => {
    tagContent(t.meta, 'claude', 'messages', 'pdf', 'PDF');
    const r = await runCase({ agent: 'claude', mode: 'clean', task: PDF_TASK, via: 'toolproof' });
    const why = describeRun(r);
    expectPass(r, PDF_TASK, { api: 'messages' });
    expectPrefix(r, PDF_TASK, { api: 'messages' });
    // The agent sent a document block; the upstream got its text, never the PDF bytes.
    expect(JSON.stringify(r.sent.map((s) => s.body)), why).toContain('"type":"document"');
    const upstream = r.upstream.map((u) => u.rawBody).join('\n');
    expect(upstream, why).toContain('The audit number is 58213.');
    expect(upstream, why).not.toContain('application/pdf;base64');
  });
});

describeAgents('real content: a PDF, the chat agents', () => {
  // Before, neither said it could take a PDF: opencode's read tool answered "PDF read
  // successfully" and sent the model nothing of it, and Qwen Code's ran pdftotext (not installed:
  // "pdftotext is not installed"). The launcher now declares PDF input for every model: the
  // agent sends the file, toolproof sends its text upstream. The model's window is not known
  // (vLLM's list says nothing of vision), as on most GPU boxes.
  for (const agent of ['opencode', 'qwen'] as const)
    it(`${agent} reads a PDF: its text reaches the upstream, the answer is the number it holds`, async ({
      task: t,
    }) => {
      tagContent(t.meta, agent, 'chat', 'pdf', 'PDF');
      const r = await runCase({ agent, mode: 'clean', task: PDF_TASK, via: 'toolproof' });
      const why = describeRun(r);
      expectPass(r, PDF_TASK, { api: 'chat' });
      const upstream = r.upstream.map((u) => u.rawBody).join('\n');
      expect(upstream, why).toContain('The audit number is 58213.');
      expect(upstream, why).not.toContain('application/pdf;base64');
    });
});

/** A valid 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const IMAGE_TASK: Task = {
  id: 'image',
  prompt: 'Look at pixel.png, then say done.',
  files: { 'pixel.png': PNG },
  steps: [{ op: 'read', path: 'pixel.png' }],
  final: 'done',
  expect: {},
};
const PNG_B64 = PNG.toString('base64').slice(0, 40);

describeAgents('real content (issue 26): images', () => {
  for (const vision of [false, true]) {
    it(`Claude Code reads an image on a model marked vision: ${vision}`, async ({ task: t }) => {
      tagContent(
        t.meta,
        'claude',
        'messages',
        `image-${vision}`,
        vision ? 'image, vision' : 'image, text-only',
      );
      const r = await runCase({
        agent: 'claude',
        mode: 'clean',
        task: IMAGE_TASK,
        via: 'toolproof',
        file: () => ({ defaults: { vision } }) as never,
      });
      const why = describeRun(r);
      expectPass(r, IMAGE_TASK, { api: 'messages' });
      expectPrefix(r, IMAGE_TASK, { api: 'messages' });
      expect(JSON.stringify(r.sent.map((s) => s.body)), why).toContain(PNG_B64);
      const upstream = r.upstream.map((u) => u.rawBody).join('\n');
      if (vision) expect(upstream, why).toContain(PNG_B64);
      else {
        expect(upstream, why).not.toContain(PNG_B64);
        expect(upstream, why).toContain('this model cannot read images');
      }
    });
  }
});

describeAgents('real content: an image on a text-only vLLM model toolproof was not told of', () => {
  // vLLM's /v1/models does not say whether a model sees: `vision: auto` lets the image through,
  // the backend refuses it (400 "... is not a multimodal model"), and Claude Code sends it again
  // on every turn. toolproof sends the turn again with the note and remembers the model.
  it('Claude Code reads an image; the backend refuses it once, the session goes on', async ({ task: t }) => {
    tagContent(t.meta, 'claude', 'messages', 'image-refused', 'image, vLLM refuses');
    const r = await runCase({
      agent: 'claude',
      mode: 'clean',
      task: IMAGE_TASK,
      via: 'toolproof',
      model: { vision: false },
    });
    const why = describeRun(r);
    expectPass(r, IMAGE_TASK, { api: 'messages' });
    expect(JSON.stringify(r.sent.map((s) => s.body)), why).toContain(PNG_B64);
    const withImage = r.upstream.filter((u) => u.rawBody.includes(PNG_B64));
    // One refused attempt at most; every later turn goes with the note.
    expect(withImage.length, why).toBeLessThanOrEqual(1);
    expect(r.upstream.at(-1)!.rawBody, why).toContain('this model cannot read images');
  });
});

describeAgents('real content (issue 26): images, a chat agent', () => {
  for (const vision of [false, true]) {
    it(`pi (chat) reads an image on a model marked vision: ${vision}`, async ({ task: t }) => {
      tagContent(t.meta, 'pi', 'chat', `image-${vision}`, vision ? 'image, vision' : 'image, text-only');
      const r = await runCase({
        agent: 'pi',
        mode: 'clean',
        task: IMAGE_TASK,
        via: 'toolproof',
        piApi: 'openai-completions',
        file: () => ({ defaults: { vision } }) as never,
      });
      const why = describeRun(r);
      expectPass(r, IMAGE_TASK, { api: 'chat' });
      expectPrefix(r, IMAGE_TASK, { api: 'chat' });
      const sent = JSON.stringify(r.sent.map((s) => s.body));
      const upstream = r.upstream.map((u) => u.rawBody).join('\n');
      if (vision) {
        // toolproof's model list says the model sees (input_modalities): launch tells pi, pi sends the PNG, it reaches the upstream.
        expect(sent, why).toContain(PNG_B64);
        expect(upstream, why).toContain(PNG_B64);
      } else {
        // Said text-only, pi leaves the image out with its own note; nothing the backend would refuse goes up.
        expect(upstream, why).not.toContain(PNG_B64);
        expect(upstream, why).toMatch(/does not support images|cannot read images/);
      }
    });
  }
});

/**
 * 2 MB on one command's output, in lines of 100; opencode keeps 50 KB of it. Printable: NUL bytes
 * (a binary file printed by a shell) came out of opencode as 5-9 KB, varying from run to run, once
 * under toolproof's cap (nothing to cut: the test failed in CI on a loaded box).
 */
const BIG_TASK: Task = {
  id: 'big-output',
  prompt: 'Run the log dump command, then say done.',
  files: {},
  steps: [{ op: 'run', command: "head -c 2000000 /dev/zero | tr '\\0' x | fold -w 100" }],
  final: 'done',
  expect: {},
};

describeAgents('real content (issue 26): a 2 MB tool result into a 32k window', () => {
  it('opencode: the shell prints 2 MB, maxToolResultTokens cuts it, the session finishes', async ({
    task: t,
  }) => {
    tagContent(t.meta, 'opencode', 'chat', 'big-output', '2 MB output, 32k');
    const r = await runCase({
      agent: 'opencode',
      mode: 'clean',
      task: BIG_TASK,
      via: 'toolproof',
      // The backend serves a 32k window (it reports it, and refuses a longer prompt with vLLM's 400).
      model: { windowTokens: 32_768 },
      file: () => ({ defaults: { maxToolResultTokens: 8000 } }) as never,
      timeoutMs: 90_000,
    });
    const why = describeRun(r);
    expectPass(r, BIG_TASK, { api: 'chat' });
    expectPrefix(r, BIG_TASK, { api: 'chat' });
    // Each tool result as the agent sent it and as the upstream got it (last request: the whole
    // history). opencode keeps 50 KB of the 2 MB on a quiet box, past toolproof's 8,000-token cap;
    // on a loaded one it has kept less (what it had gathered of the stream when the command
    // ended), at times under the cap, with nothing for toolproof to cut. So: a result over the cap
    // by any count (more than 4 characters a token) arrives cut, with the note, under it; one
    // under the cap arrives as the agent sent it. Neither may be lost.
    type Msg = { role: string; content: unknown };
    const toolTexts = (body: unknown) =>
      ((body as { messages?: Msg[] }).messages ?? [])
        .filter((m) => m.role === 'tool')
        .map((m) => String(m.content));
    const sent = toolTexts(r.sent.at(-1)?.body);
    const upstream = toolTexts(JSON.parse(r.upstream.at(-1)?.rawBody ?? '{}'));
    expect(sent.length, why).toBeGreaterThan(0);
    expect(upstream.length, why).toBe(sent.length);
    const cap = 4 * 8000 + 500;
    sent.forEach((text, i) => {
      if (text.length > cap) {
        expect(upstream[i], why).toContain('re-run with a narrower command');
        expect(upstream[i]!.length, why).toBeLessThan(cap);
      } else if (!upstream[i]!.includes('re-run with a narrower command')) {
        expect(upstream[i], why).toBe(text);
      }
    });
  });
});
