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
