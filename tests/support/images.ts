/**
 * An image in a chat message, as the OpenAI SDKs send one: the tests of images a backend refuses
 * (tests/e2e/vision-refused, the inspector's refused attempt) share it.
 */

/** 300 zero bytes as base64 (no backend here decodes it; toolproof's note counts 300 B). */
export const PNG_300_BASE64 = Buffer.alloc(300).toString('base64');
/** The same as a PNG data URL. */
export const PNG_300_DATA_URL = `data:image/png;base64,${PNG_300_BASE64}`;

/** A user message asking `text` about the image at `url`. */
export function chatImageMessage(text: string, url = PNG_300_DATA_URL) {
  return {
    role: 'user' as const,
    content: [
      { type: 'text' as const, text },
      { type: 'image_url' as const, image_url: { url } },
    ],
  };
}

/** A 1x1 PNG as base64: what llama-server's decoder (stb_image) reads. */
export const PNG_1X1_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** The head of a WebP (RIFF....WEBPVP8L), 34 bytes as base64: what stb_image does not read. */
export const WEBP_HEAD_BASE64 = Buffer.from(
  'RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00',
  'latin1',
).toString('base64');

/** The media types of a base64 image block of the Messages API. */
type MessagesImageMedia = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * An image block of the Messages API, as the anthropic SDK sends one: base64 `data` of `media`,
 * or, given `{ url }`, the image at that URL.
 */
export function messagesImage(data: string | { url: string }, media: MessagesImageMedia = 'image/png') {
  return typeof data === 'string'
    ? { type: 'image' as const, source: { type: 'base64' as const, media_type: media, data } }
    : { type: 'image' as const, source: { type: 'url' as const, url: data.url } };
}

/** A Messages user turn asking `text` about an image (`messagesImage`'s `data`, a PNG by default). */
export function messagesImageMessage(text: string, data: string | { url: string } = PNG_300_BASE64) {
  return {
    role: 'user' as const,
    content: [{ type: 'text' as const, text }, messagesImage(data)],
  };
}

/** The screenshot tool of the agent turns below, as a Messages tool. */
export const SCREENSHOT_TOOL = {
  name: 'screenshot',
  input_schema: { type: 'object' as const, properties: {} },
};

/**
 * One screenshot step of an agent on the Messages API (Claude Code's shape): the assistant's
 * `screenshot` call `id`, then the user turn holding its result, `images` (`messagesImage`).
 */
export function screenshotTurn(id: string, images: ReturnType<typeof messagesImage>[]) {
  return [
    {
      role: 'assistant' as const,
      content: [{ type: 'tool_use' as const, id, name: 'screenshot', input: {} }],
    },
    {
      role: 'user' as const,
      content: [{ type: 'tool_result' as const, tool_use_id: id, content: images }],
    },
  ];
}
