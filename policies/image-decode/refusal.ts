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
 * encodings with a 400").
 * The error names no image: the inline images whose first bytes are no format the decoder reads
 * are refused; where every one looks readable (a corrupt PNG, an odd JPEG), all of them, since
 * which one failed cannot be told, unless an audio clip of the request looks unreadable: the
 * same words refuse a clip llama-server cannot load, and that clip is audio-decode's
 * (kit/audio-part.ts); noting readable images for it would lose them for the session.
 *
 * vLLM decodes with PIL (vllm/multimodal/media/image.py, Image.open), and its media connector
 * turns PIL's UnidentifiedImageError into a ValueError (media/connector.py, fetch_image), a 400
 * BadRequestError in PIL's words, "cannot identify image file <_io.BytesIO object at 0x…>",
 * naming no image; SGLang and hosted runtimes answer the same words ("Failed to load image:
 * cannot identify image file <_io.BytesIO object>", an agent's notes on a screenshot that
 * "killed the session ... every later turn in that session failed too"). PIL reads WebP and TIFF
 * but no SVG, HEIC (without the pillow-heif plugin) or PDF. That error comes from Image.open
 * alone, which reads only the first bytes, so an image whose first bytes are a format PIL opens
 * is never the one (a truncated PNG fails later, in other words): the images named are those
 * whose first bytes are none of PIL's formats, and where there is none the refusal is relayed.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { splitDataUrl } from '../../protocol/file-part.js';
import { inlineAudio, unreadableAudio } from '../kit/audio-part.js';
import { imageUrlsWhere } from '../kit/image-part.js';
import { refusalSays } from '../kit/media-refusal.js';

/** llama-server's words (stb_image through mtmd, for an image or a clip). */
const STB_SIGNATURES: readonly RegExp[] = [/\bFailed to load image or audio file\b/];
/** PIL's words (vLLM, SGLang): Image.open found no format for the bytes' head. */
const PIL_SIGNATURES: readonly RegExp[] = [/\bcannot identify image file\b/];

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

/**
 * The first bytes of a format PIL's Image.open identifies (beside those above): WebP
 * (RIFF....WEBP), TIFF (both byte orders), ICO, PBM/PGM/PPM in either encoding, JPEG 2000 (its
 * box and its codestream). TGA and a few more have no magic: an image of none of these counts
 * unreadable, which matters only when PIL's refusal came (one of them then must be the one).
 */
const PIL_READABLE: readonly number[][] = [
  ...READABLE,
  [0x49, 0x49, 0x2a, 0x00], // II*\0 (TIFF)
  [0x4d, 0x4d, 0x00, 0x2a], // MM\0* (TIFF)
  [0x00, 0x00, 0x01, 0x00], // ICO
  [0x50, 0x31],
  [0x50, 0x32],
  [0x50, 0x33],
  [0x50, 0x34], // P1-P4 (PNM)
  [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20], // JPEG 2000 box
  [0xff, 0x4f, 0xff, 0x51], // JPEG 2000 codestream
];

/** The head of an image's bytes (a dozen bytes), or null when it is no base64 data URL. */
function imageHead(url: string): Buffer | null {
  const data = splitDataUrl(url);
  return data ? Buffer.from(data.base64.slice(0, 16), 'base64') : null;
}

function startsAs(head: Buffer | null, formats: readonly number[][], webp: boolean): boolean {
  if (!head || head.length < 2) return false; // not base64, or empty: nothing a decoder reads
  if (webp && head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP')
    return true;
  return formats.some((magic) => magic.every((b, i) => head[i] === b));
}

/** Whether the data URL's bytes begin as no format stb_image reads (only its head is decoded). */
export function unreadableImage(url: string): boolean {
  return !startsAs(imageHead(url), READABLE, false);
}

/** Whether the data URL's bytes begin as no format PIL's Image.open identifies. */
export function unidentifiableImage(url: string): boolean {
  return !startsAs(imageHead(url), PIL_READABLE, true);
}

/**
 * The inline images of `sent` the error says could not be decoded: llama-server's, those that
 * look unreadable, else all of them; PIL's, those of no format it identifies, else none; none
 * when it is no decoding failure or `sent` has no inline image.
 */
export function undecodedImages(status: number, body: unknown, sent: ChatCompletionRequest): string[] {
  if (refusalSays(PIL_SIGNATURES, status, body)) return inlineImages(sent).filter(unidentifiableImage);
  if (!refusalSays(STB_SIGNATURES, status, body)) return [];
  const images = inlineImages(sent);
  const unreadable = images.filter(unreadableImage);
  if (unreadable.length > 0) return unreadable;
  return inlineAudio(sent).some(unreadableAudio) ? [] : images;
}
