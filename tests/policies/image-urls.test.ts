import { describe, expect, it } from 'vitest';
import { imageUrlsPolicy, unfetchedNote } from '../../policies/image-urls/index.js';
import { bareServerError, unfetchedUrls } from '../../policies/image-urls/refusal.js';
import { ctxWith } from './helpers.js';

const OLD = 'https://bucket.example/shots/a.png?X-Amz-Signature=abc';
const NEW = 'https://bucket.example/shots/b.png?X-Amz-Signature=def';
const DATA = 'data:image/png;base64,AAAA';
const req = {
  model: 'm',
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image_url', image_url: { url: OLD } },
        { type: 'image_url', image_url: { url: DATA } },
      ],
    },
    { role: 'tool', tool_call_id: 'c', content: [{ type: 'image_url', image_url: { url: NEW } }] },
  ],
};

describe('image-urls', () => {
  it("reads the backends' fetch failures: the URL vLLM names, every remote one for llama-server", () => {
    // llama-server (tools/server): a 400 naming no URL
    expect(unfetchedUrls(400, { error: { code: 400, message: 'Failed to download image' } }, req)).toEqual([
      OLD,
      NEW,
    ]);
    // vLLM (multimodal/media/connector.py): a 422 naming it
    const vllm = {
      error: {
        message: `Failed to fetch media from URL: HTTP 403 error (parameter=image_url, value=${NEW})`,
        type: 'UnprocessableEntityError',
        code: 422,
      },
    };
    expect(unfetchedUrls(422, vllm, req)).toEqual([NEW]);
    // anything else is no fetch failure: never a status alone, never a data URL
    expect(unfetchedUrls(400, { error: { message: 'image input is not supported' } }, req)).toEqual([]);
    expect(unfetchedUrls(200, { error: { message: 'Failed to download image' } }, req)).toEqual([]);
    const dataOnly = { model: 'm', messages: [req.messages[0]!] };
    dataOnly.messages[0] = {
      role: 'user',
      content: [{ type: 'image_url', image_url: { url: DATA } }],
    } as never;
    expect(unfetchedUrls(400, { error: { message: 'Failed to download image' } }, dataOnly)).toEqual([]);
  });

  it('reads both refusals of a file: URL as every file: image of the request, with its own note', () => {
    const FILE = 'file:///home/me/shot%201.png';
    const withFile = {
      model: 'm',
      messages: [
        ...req.messages,
        { role: 'user', content: [{ type: 'image_url', image_url: { url: FILE } }] },
      ],
    };
    // llama-server (handle_media), a 400 naming no URL; vLLM (connector.py _load_file_url)
    for (const message of [
      'file:// URLs are not allowed unless --media-path is specified',
      'Cannot load local files without `--allowed-local-media-path`.',
      'The file path /home/me/shot 1.png must be a subpath of `--allowed-local-media-path` /srv.',
    ])
      expect(unfetchedUrls(400, { error: { message } }, withFile as never), message).toEqual([FILE]);
    // a fetch failure is the http ones' only
    expect(unfetchedUrls(400, { error: { message: 'Failed to download image' } }, withFile as never)).toEqual(
      [OLD, NEW],
    );
    expect(imageUrlsPolicy.refusal?.values?.candidates(withFile as never)).toContain(FILE);
    expect(unfetchedNote(FILE)).toBe(
      '[image not available: shot 1.png, size unknown; the model server does not read local file URLs]',
    );
  });

  it("reads old vLLM's bare 500 (the ASGI stack's text) as every remote image, unsure; no other 500", () => {
    expect(unfetchedUrls(500, 'Internal Server Error', req)).toEqual([OLD, NEW]);
    expect(bareServerError(500, 'Internal Server Error')).toBe(true);
    // a 500 that says something (vLLM's own JSON, llama-server's) is no fetch failure
    expect(unfetchedUrls(500, { error: { message: 'Internal Server Error', code: 500 } }, req)).toEqual([]);
    expect(unfetchedUrls(500, 'Internal Server Error: CUDA out of memory', req)).toEqual([]);
    expect(unfetchedUrls(502, 'Internal Server Error', req)).toEqual([]);
    const dataOnly = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: DATA } }] }],
    };
    expect(unfetchedUrls(500, 'Internal Server Error', dataOnly as never)).toEqual([]);
    // the policy says it is unsure: remembered only once the request without them is answered
    expect(imageUrlsPolicy.refusal?.values?.unsure?.(500, 'Internal Server Error')).toBe(true);
    expect(imageUrlsPolicy.refusal?.values?.unsure?.(422, { error: { message: 'x' } })).toBe(false);
  });

  it('notes exactly the refused URLs, the same bytes every time, and nothing without them', () => {
    const run = (values?: string[]) =>
      imageUrlsPolicy.onRequest!(
        req as never,
        ctxWith(
          values ? { refused: { now: new Set(), remembered: new Set(), values: new Set(values) } } : {},
        ),
        req as never,
      );
    const none = run();
    expect(none.action === 'continue' && none.request).toBe(req);
    const d = run([OLD]);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages[0]!.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'text', text: unfetchedNote(OLD) },
      { type: 'image_url', image_url: { url: DATA } },
    ]);
    expect(d.request.messages[1]).toBe(req.messages[1]);
    expect(unfetchedNote(OLD)).toBe(
      '[image not available: a.png, size unknown; the model server could not fetch its URL (expired or no longer reachable)]',
    );
    expect(d.effects).toEqual([{ policy: 'image-urls', kind: 'image-unfetched', count: 1 }]);
    expect(JSON.stringify(run([OLD]))).toBe(JSON.stringify(d));
  });
});
