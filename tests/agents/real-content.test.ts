/**
 * Issue 26: agent sessions with real content, run by the real CLIs through toolproof. Each ends
 * its task with every turn answered 2xx and the prefix contract holding across its turns.
 *
 * - Claude Code reads a PDF made here: its Read tool returns a `document` block inside
 *   `tool_result`; toolproof sends the extracted text upstream, and the scripted model answers
 *   with the number it finds in what it received (a number only the PDF's text holds).
 * - Claude Code reads an image on a model marked `vision: false` (the upstream gets the note, not
 *   the image) and on one marked `vision: true` (the image reaches the upstream).
 */
import { expect, it } from 'vitest';
import { textPdf } from '../support/pdf.js';
import { describeRun, runCase } from './lib/case.js';
import { describeAgents, expectPass, expectPrefix } from './lib/suite.js';
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
  it('Claude Code reads a PDF: its text reaches the upstream, the answer is the number it holds', async () => {
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
    it(`Claude Code reads an image on a model marked vision: ${vision}`, async () => {
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
