/**
 * An image part as the policies that replace one with a note read it (images: a model that
 * cannot see; image-urls: a URL its backend could not fetch). Pure.
 */
import { base64Size, splitDataUrl } from '../../protocol/file-part.js';
import type { ChatCompletionRequest, ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { partValues } from './content-parts.js';
import { formatBytes } from './sizes.js';

/** The part's image URL, when it is an image part (`image_url` as an object or a bare string). */
export function imageUrl(part: ContentPart): string | undefined {
  if (part.type !== 'image_url' && part.type !== 'input_image') return undefined;
  const v = part.image_url;
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.url === 'string') return v.url;
  return '';
}

/**
 * What a note names the image by: its media type and size for a data URL, its file name for a
 * remote one (never fetched, so its size is not known). One line, bounded.
 */
export function imageLabel(url: string): string {
  const data = splitDataUrl(url);
  if (data) return `${data.mediaType}, ${formatBytes(base64Size(data.base64))}`;
  if (url === '') return 'no URL, 0 B';
  let name = url.startsWith('data:') ? 'data URL' : url;
  try {
    const path = new URL(url).pathname;
    name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || new URL(url).host;
  } catch {
    // not a URL: its own (bounded) text
  }
  return `${name.replace(/[\r\n[\]]+/g, ' ').slice(0, 120)}, size unknown`;
}

/** Whether the backend fetches `url` itself (http or https), as both llama-server and vLLM do. */
export function isRemoteUrl(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

/**
 * The request's image URLs that `keep` accepts, in order, each once, long ones told apart by
 * digest (StringSet: a plain Set of 20 KB data URLs differing at their ends compares each with
 * every other, redteam16) (image-urls: the ones the backend fetches; image-decode: the inline ones
 * it decodes).
 */
export function imageUrlsWhere(request: ChatCompletionRequest, keep: (url: string) => boolean): string[] {
  return partValues(request, (p) => {
    const url = imageUrl(p as never);
    return url !== undefined && keep(url) ? url : undefined;
  });
}
