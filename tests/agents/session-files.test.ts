/**
 * A session that carries files, as real ones do: a three-page PDF, a PNG screenshot and a command
 * that prints 1 MB, read one turn each by the real CLIs through toolproof on a llama-server whose
 * window (n_ctx) is small and enforced, multimodal (--mmproj) and text-only; toolproof reads
 * which from /props at start-up, as server/main.ts does. Every request the agent sends is
 * answered 200, the session ends with an answer, and each turn extends the one before byte for
 * byte upstream. Claude Code compacts twice in 32k and still answers the number the PDF's last
 * page holds. Not covered: what the others do with the PDF (Qwen Code wants pdftotext, opencode
 * drops it for a model not said to read PDFs, pi and Codex read the bytes). On a leaky model with
 * forcing off (leak recovery alone), Codex, the Continue CLI, Grok CLI and the OpenAI Agents SDK
 * run the same session to its answer. Cline compacts in 32k and answers; Kilo sends the PDF
 * as a file part, whose text toolproof extracts, and compacts once.
 *
 * Left out, the agent's own doing: the Continue CLI 1.5.47 in a 32k window starts over for ever.
 * Its Read tool reads the 44 KB PNG as UTF-8 text (42,094 characters, 18,856 of them U+FFFD), which
 * its own count (gpt-tokenizer, src/util/tokenizer.ts) makes ~33,600 tokens, more than the whole
 * window: its check after the tool (src/stream/streamChatResponse.compactionHelpers.ts) forces a
 * compaction, which prunes the history from its end until it fits (src/compaction.ts
 * pruneLastMessage: each tool's output lives in its assistant turn, so the PNG's turn and the
 * PDF's go together), summarises the prompt alone and drops it; the model, told nothing was done,
 * reads the files again. Every request reaches toolproof small and is answered 200 (1,253 in 150 s,
 * its log: "Tool execution caused context overflow, forcing compaction {inputTokens: 35529}",
 * "pruning last message {historyLength: 3}"); the PNG never leaves the CLI. The leaky rows below
 * run it in the suite's 128k window, where it finishes. */
import { expect, it } from 'vitest';
import type { AgentId, PiApi } from './lib/agents.js';
import { describeRun, MARKUP, runCase } from './lib/case.js';
import { checkPrefix } from './lib/prefix.js';
import { type Api, describeAgents, tagContent } from './lib/suite.js';
import { SESSION_TASK } from './lib/session-task.js';

interface Row {
  agent: AgentId;
  api: Api;
  /** llama-server's n_ctx. */
  window: number;
  /** Started with --mmproj (its /props says it sees; toolproof's `vision: auto` reads that). */
  vision: boolean;
  piApi?: PiApi;
}
/**
 * The agents whose own tools read images (Codex reads files through its shell only). Claude Code's
 * prompt is ~20k tokens, so 32k is its small window (it compacts twice in this session); pi's
 * is small enough for 8k.
 */
const ROWS: Row[] = [
  { agent: 'claude', api: 'messages', window: 32_768, vision: true },
  { agent: 'claude', api: 'messages', window: 32_768, vision: false },
  { agent: 'qwen', api: 'chat', window: 32_768, vision: true },
  { agent: 'opencode', api: 'chat', window: 32_768, vision: true },
  { agent: 'pi', api: 'chat', window: 8192, vision: true, piApi: 'openai-completions' },
  { agent: 'kilo', api: 'chat', window: 32_768, vision: true },
  { agent: 'cline', api: 'chat', window: 32_768, vision: true },
  { agent: 'cline', api: 'chat', window: 32_768, vision: false },
];

describeAgents(
  'a session carrying a PDF, a screenshot and 1 MB of output (llama-server, small window)',
  () => {
    for (const row of ROWS) {
      const seeing = row.vision ? 'multimodal' : 'text-only';
      it(`${row.agent} (${row.api}, n_ctx ${row.window}, ${seeing}): every turn 200, the prefix holds`, async ({
        task: t,
      }) => {
        tagContent(t.meta, row.agent, row.api, `files-session-${seeing}`, `PDF + PNG + 1 MB, ${seeing}`);
        const r = await runCase({
          agent: row.agent,
          mode: 'clean',
          task: SESSION_TASK,
          via: 'toolproof',
          ...(row.piApi ? { piApi: row.piApi } : {}),
          model: {
            vision: row.vision,
            server: { personality: 'llama-server', window: row.window, imageTokens: 256 },
          },
          timeoutMs: 120_000,
        });
        const why = describeRun(r);
        expect(r.run.exitCode, why).toBe(0);
        expect(r.text, why).not.toBe('');
        expect(r.text, why).not.toMatch(MARKUP);
        // Every request the agent sent was answered 200: no overflow, no refused image reached it.
        const turns = r.logs.filter((l) => l.api === row.api);
        expect(turns.length, why).toBe(r.sent.length);
        for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
        // Turns extend the turn before byte for byte (Claude Code's compactions start new conversations).
        const check = checkPrefix(r.upstream);
        expect(check.checked, why).toBeGreaterThanOrEqual(1);
        expect(check.breaks, why).toEqual([]);
        const sent = JSON.stringify(r.sent.map((s) => s.body));
        const upstream = r.upstream.map((u) => u.rawBody).join('\n');
        // The screenshot: the agent sends it; it reaches a model that sees, and a note stands in for
        // it (from the first turn on, /props said so: never a refused attempt) on one that does not.
        // (Qwen Code re-encodes it: its own PNG, not the file's bytes.)
        expect(sent, why).toMatch(/"type":"image(_url)?"/);
        if (row.vision) expect(upstream, why).toContain('data:image/');
        else {
          expect(upstream, why).not.toContain('data:image/');
          expect(upstream, why).toContain('this model cannot read images');
        }
        if (row.agent === 'claude') {
          // Its Read tool sends the PDF as a document block; its text goes up, and the answer (after
          // two compactions in 32k) is the number only the PDF's last page holds.
          expect(sent, why).toContain('"type":"document"');
          expect(upstream, why).not.toContain('application/pdf;base64');
          expect(r.text, why).toMatch(/\b58213\b/);
        }
        if (row.agent === 'kilo') {
          // Its read tool attaches the PDF as a `file` part (base64): toolproof puts its text in
          // its place. Its own compaction (the 1 MB, which it cuts to ~50 KB, past 32k) writes the
          // attachment out as "[Attached application/pdf: file]", so the number goes with it and
          // the answer says it is not there.
          expect(sent, why).toContain('data:application/pdf;base64');
          expect(upstream, why).not.toContain('application/pdf;base64');
          expect(upstream, why).toContain('The audit number is 58213.');
          expect(upstream, why).toContain('Do not mention the summary process');
        }
        if (row.agent === 'cline') {
          // Its read_files calls fit the schema it declares (objects, not bare paths): none
          // re-asked. It compacts (the 1 MB command's 8 KB and the PNG past its 32k budget), its
          // second compaction opening with the first's summary, and ends with the model's answer
          // through submit_and_exit. It reads the PDF's bytes (compressed streams: the number is
          // not in them), so the answer says so. Before, the script's bare paths were re-asked, the
          // step count drifted, and Cline compacted after each re-run of the command and exited 0
          // with no answer.
          for (const line of turns) expect(line.harness?.validationFailures ?? [], why).toEqual([]);
          expect(upstream, why).toContain('Summarize this session for continuation');
          expect(r.text, why).toMatch(/(^|\n)(The number is not in what I was given\.|58213)[^\n]*$/);
        }
      });
    }

    // Kilo's own prompt (~12.6k tokens with its tools) in 16k. It compacts once its count passes
    // the window less the output it keeps free; with a quarter of the window (4,096), as
    // `toolproof launch` set it before, the two filled 16k, so it compacted before each turn that
    // carried a file, three times, and no turn but a compaction ever carried the PDF. The launcher
    // now keeps half of what the prompt leaves (1,892: cli/launch/reserve.ts): the PDF's text and
    // the screenshot go up in turns of the session itself, and Kilo compacts once, after the 1 MB
    // (as in 32k, its summary writes the PDF out as "[Attached application/pdf: file]", so the
    // answer says the number is not there).
    it('kilo (chat, n_ctx 16384, multimodal): the PDF and the screenshot read in the session, one compaction, the answer', async ({
      task: t,
    }) => {
      tagContent(t.meta, 'kilo', 'chat', 'files-session-16k', 'PDF + PNG + 1 MB, 16k');
      const r = await runCase({
        agent: 'kilo',
        mode: 'clean',
        task: SESSION_TASK,
        via: 'toolproof',
        model: { vision: true, server: { personality: 'llama-server', window: 16_384, imageTokens: 256 } },
        timeoutMs: 120_000,
      });
      const why = describeRun(r);
      expect(r.run.exitCode, why).toBe(0);
      for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
      const summary = (u: { rawBody: string }) => u.rawBody.includes('Do not mention the summary process');
      const turns = r.upstream.filter((u) => !summary(u));
      expect(
        turns.some((u) => u.rawBody.includes('The audit number is 58213.')),
        why,
      ).toBe(true);
      expect(
        turns.some((u) => u.rawBody.includes('data:image/')),
        why,
      ).toBe(true);
      expect(r.upstream.filter(summary).length, why).toBe(1);
      expect(r.text, why).toMatch(/(^|\n)The number is not in what I was given\.[^\n]*$/);
    });
  },
);

/**
 * The same session on a leaky model (its calls written as `<tool_call>` text, recovered by
 * toolproof; forcing off, so no guided decoding turns them into calls upstream), for the agents the rows above leave out. Their read tools give the PDF and the PNG
 * back as text (the bytes as their CLI decodes them: control characters, U+FFFD), and each caps
 * the 1 MB its own way (Codex 10 KB, the Continue CLI 50 KB; Grok CLI and the OpenAI Agents SDK's
 * program not at all: toolproof's window backstop cuts it). Each ends its loop with an answer (the
 * number is not in what they read: the answer says so), every call it was sent came from the
 * leaked text, and the turns extend each other byte for byte.
 */
const LEAKY: Array<{ agent: AgentId; api: Api; sdk?: boolean; noStream?: boolean }> = [
  { agent: 'codex', api: 'responses' },
  { agent: 'cn', api: 'chat' },
  { agent: 'grok', api: 'chat', noStream: true },
  { agent: 'openai-agents', api: 'chat', sdk: true },
];

describeAgents('a session carrying a PDF, a screenshot and 1 MB of output, on a leaky model', () => {
  for (const row of LEAKY)
    it(`${row.agent} (${row.api}): every turn 200, every step a recovered call, the prefix holds`, async ({
      task: t,
    }) => {
      tagContent(t.meta, row.agent, row.api, 'files-session-leak', 'PDF + PNG + 1 MB, leaky');
      const r = await runCase({
        agent: row.agent,
        mode: 'leak',
        task: SESSION_TASK,
        via: 'toolproof',
        ...(row.sdk ? { target: { sdk: { api: 'chat' as const, stream: true } } } : {}),
        // Forcing off: every call reaches the agent only through leak recovery.
        file: () => ({ defaults: { forceToolUse: false } }),
        timeoutMs: 90_000,
      });
      const why = describeRun(r);
      expect(r.run.exitCode, why).toBe(0);
      expect(r.text, why).not.toBe('');
      expect(r.text, why).not.toMatch(MARKUP);
      const turns = r.logs.filter((l) => l.api === row.api);
      expect(turns.length, why).toBe(r.sent.length);
      for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
      for (const line of turns) expect(line.stream, why).toBe(!row.noStream);
      // The three reads and the command, each a call toolproof recovered from the leaked text.
      const leaks = turns.flatMap((l) => (l.harness?.leaks ?? []) as Array<{ outcome: string }>);
      expect(leaks.filter((l) => l.outcome === 'recovered').length, why).toBeGreaterThanOrEqual(3);
      const check = checkPrefix(r.upstream);
      expect(check.checked, why).toBeGreaterThanOrEqual(3);
      expect(check.breaks, why).toEqual([]);
    });
});
