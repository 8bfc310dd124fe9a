/**
 * Surface budgets (see surface-budgets.test.ts) for this round's content rewrites: the
 * tool-result cut a known window makes with no cap set (tool results x their length, tool
 * messages x their parts), chat `file_data` typed by its first bytes or file name (parts x the
 * base64's and the name's length, on the chat and Responses doors), and the scan for images
 * after a backend refused a request (messages x parts, none an image: the whole request read).
 * Each costs at most about 4x for input 4x larger, in time and retained memory.
 */
import { describe, it } from 'vitest';
import { carriesImages } from '../../policies/images/refusal.js';
import { toolResultCapPolicy } from '../../policies/tool-result-cap/index.js';
import { fileFields } from '../../protocol/file-part.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { translateRequest as fromResponses } from '../../protocol/responses/request.js';
import { ctxWith } from '../policies/helpers.js';
import { budget, pick } from './surface-budget.js';

/** A window of 2,000 tokens, no cap of its own: results over the window are cut to 500 tokens. */
const windowCtx = ctxWith({}, { maxToolResultTokens: 0, contextWindow: 2000 });

const LINES = ['ok ', 'line of log output\n', 'é', '\0', '{"k": [1, 2]}\n', '😀', ' '.repeat(40), '\t'];

function noise(rnd: () => number, size: number): string {
  let s = '';
  while (s.length < size) s += pick(rnd, LINES);
  return s;
}

const cap = (request: ChatCompletionRequest) => toolResultCapPolicy.onRequest!(request, windowCtx, request);

describe('content rewrites: x1 vs x4', () => {
  it('tool-result cut by a known window: one result x its length', () => {
    budget(
      'tool-result cut (window), result length',
      (size, rnd) =>
        ({
          model: 'm',
          messages: [
            { role: 'user', content: 'cat it' },
            { role: 'tool', tool_call_id: 'c1', content: noise(rnd, size) },
          ],
        }) as ChatCompletionRequest,
      cap,
      { from: 64_000, max: 8_000_000 },
      4101,
    );
  }, 120_000);

  it('tool-result cut by a known window: tool messages x their text parts', () => {
    budget(
      'tool-result cut (window), messages x parts',
      (size, rnd) => {
        const n = Math.max(1, Math.round(Math.sqrt(size)));
        return {
          model: 'm',
          messages: Array.from({ length: n }, (_, i) => ({
            role: 'tool',
            tool_call_id: `c${i}`,
            // some results fit, some do not: the window's cut shares each result's budget
            content: Array.from({ length: n }, () => ({ type: 'text', text: noise(rnd, 40 + rnd() * 400) })),
          })),
        } as ChatCompletionRequest;
      },
      cap,
      { from: 256, max: 40_000 },
      4102,
    );
  }, 120_000);

  it('chat file_data typed by its first bytes or name: parts x base64 and name length', () => {
    budget(
      'file_data typing (chat parts)',
      (size, rnd) => {
        const n = Math.max(1, Math.round(Math.sqrt(size)));
        return Array.from({ length: n }, (_, i) => ({
          type: 'file',
          file: {
            // bare base64 (a PDF's %PDF- or anything else), names with and without a known suffix
            file_data: `${rnd() < 0.5 ? 'JVBERi0' : 'AAAA'}${'QUJD'.repeat(n)}`,
            filename: `${'n.'.repeat(n)}${pick(rnd, ['pdf', 'PDF', 'txt', 'bin', ''])}${i}`,
          },
        }));
      },
      (parts) => parts.map((p) => fileFields(p)),
      { from: 256, max: 400_000 },
      4103,
    );
  }, 120_000);

  it('Responses input_file typed by its first bytes or name: items x base64 length', () => {
    budget(
      'file_data typing (Responses input_file)',
      (size, rnd) => {
        const n = Math.max(1, Math.round(Math.sqrt(size)));
        return {
          model: 'm',
          input: Array.from({ length: n }, (_, i) => ({
            role: 'user',
            content: [
              {
                type: 'input_file',
                file_data: `${rnd() < 0.5 ? 'JVBERi0' : 'AAAA'}${'QUJD'.repeat(n)}`,
                filename: `f${i}.${pick(rnd, ['pdf', 'md', 'bin'])}`,
              },
            ],
          })),
        };
      },
      (body) => fromResponses(body as never),
      { from: 256, max: 400_000 },
      4104,
    );
  }, 120_000);

  it('the scan for images after a refusal: messages x parts, none an image', () => {
    budget(
      'carriesImages',
      (size, rnd) => {
        const n = Math.max(1, Math.round(Math.sqrt(size)));
        return {
          model: 'm',
          messages: Array.from({ length: n }, () => ({
            role: pick(rnd, ['user', 'assistant', 'tool'] as const),
            content: Array.from({ length: n }, () =>
              rnd() < 0.5 ? { type: 'text', text: 'image_url' } : { type: 'file', file: { file_id: 'f' } },
            ),
          })),
        } as ChatCompletionRequest;
      },
      carriesImages,
      // Capped at 65,536 parts (4x: 262,144): the scan is so cheap that the 8 ms target grew it
      // to 524,288 (4x: 2M part objects, 1.5 of the row's 2.3 s of CPU spent building them). A
      // scan that looks every part up among those before (indexOf) still fails at the cap.
      { from: 256, max: 65_536 },
      4105,
    );
  }, 120_000);
});
