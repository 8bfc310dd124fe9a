/**
 * A backend's refusal of a request because it could not decode an inline image, read from the
 * error body, and which images of the request it refused. Pure.
 *
 * llama-server decodes images with stb_image (through mtmd), which reads JPEG, PNG, GIF, BMP,
 * PSD, TGA, HDR, PIC and PNM, and not WebP, AVIF, HEIC, TIFF or SVG (nor some JPEG encodings):
 * such an image refuses the whole request with "Failed to load image or audio file" (a 400
 * invalid_request_error in the reports below; a 500 where the exception reaches the generic
 * handler), naming no image. A WebP screenshot in an agent's history (browsers and chat apps
 * save them) is sent again on every later turn: each is refused, the session is over. Field
 * reports of that text for WebP on llama.cpp and the runtimes built on it: a Claude Code skill's
 * README (deepseek-harness image-analysis), an ingestion pipeline's notes, a JPEG-to-PNG
 * fallback in an agent plugin ("Some local servers (llama.cpp / stb_image) reject certain JPEG
 * encodings with a 400"). vLLM decodes with PIL, which reads WebP; what it answers for bytes
 * PIL cannot identify (SVG) is not known well enough to read here.
 * The error names no image: the inline images whose first bytes are no format the decoder reads
 * are refused; where every one looks readable (a corrupt PNG, an odd JPEG), all of them, since
 * which one failed cannot be told, unless an audio clip of the request looks unreadable: the
 * same words refuse a clip llama-server cannot load, and that clip is audio-decode's
 * (kit/audio-part.ts); noting readable images for it would lose them for the session.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { splitDataUrl } from '../../protocol/file-part.js';
import { inlineAudio, unreadableAudio } from '../kit/audio-part.js';
import { imageUrlsWhere } from '../kit/image-part.js';
import { refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [/\bFailed to load image or audio file\b/];

/** The request's inline (data URL) images, in order, each once (long ones told apart by digest: StringSet). */
export function inlineImages(request: ChatCompletionRequest): string[] {
  return imageUrlsWhere(request, (url) => url.startsWith('data:'));
}

/** The first bytes of a format stb_image reads (TGA and PIC have none to tell: counted readable). */
const READABLE: readonly number[][] = [
  [0xff, 0xd8, 0xff], // JPEG
  [0x89, 0x50, 0x4e, 0x47], // PNG
  [0x47, 0x49, 0x46, 0x38], // GIF8
  [0x42, 0x4d], // BM
  [0x38, 0x42, 0x50, 0x53], // 8BPS (PSD)
  [0x23, 0x3f], // #? (Radiance HDR)
  [0x50, 0x35], // P5 (PGM)
  [0x50, 0x36], // P6 (PPM)
];

/** Whether the data URL's bytes begin as no format the decoder reads (only its head is decoded). */
export function unreadableImage(url: string): boolean {
  const data = splitDataUrl(url);
  if (!data) return true; // not base64: nothing a decoder reads
  const head = Buffer.from(data.base64.slice(0, 16), 'base64');
  if (head.length < 2) return true;
  return !READABLE.some((magic) => magic.every((b, i) => head[i] === b));
}

/**
 * The inline images of `sent` the error says could not be decoded: those that look unreadable,
 * else all of them; none when it is no decoding failure or `sent` has no inline image.
 */
export function undecodedImages(status: number, body: unknown, sent: ChatCompletionRequest): string[] {
  if (!refusalSays(SIGNATURES, status, body)) return [];
  const images = inlineImages(sent);
  const unreadable = images.filter(unreadableImage);
  if (unreadable.length > 0) return unreadable;
  return inlineAudio(sent).some(unreadableAudio) ? [] : images;
}
