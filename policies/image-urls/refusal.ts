/**
 * A backend's refusal of a request because it could not fetch an image URL, read from the error
 * body, and which URLs of the request it refused. Pure.
 *
 * Both backends fetch a remote `image_url` themselves, on every request that carries it, and
 * refuse the whole request when a fetch fails. A signed URL (an object store's, a chat app's
 * attachment link) expires an hour or a day after the agent put it in its history, and the agent
 * sends it again on every later turn: each is refused, the session is over. The texts, from the
 * backends' sources:
 * - llama-server (tools/server, the chat parser's image download): a non-2xx answer throws
 *   "Failed to download image", answered as a 400 invalid_request_error; the URL is not named.
 * - vLLM (vllm/multimodal/media/connector.py, _wrap_media_fetch_error, since mid-2026): a 4xx
 *   answer (but 408 and 429) or a malformed URL is its 422 "Failed to fetch media from URL: HTTP
 *   403 error (parameter=image_url, value=<url>)", the URL named.
 * - vLLM before that (its issues #21254, #47163): the fetch's exception was not caught, and the
 *   ASGI stack answered a bare 500, the text/plain body "Internal Server Error" and nothing else.
 *   Any crash answers the same, so it is read only where the request has remote images, and it is
 *   unsure (bareServerError): the server sends the request again with every remote image as its
 *   note, and remembers those URLs only if that request is answered (UpstreamRefusal.values.unsure).
 *   A 500 with a JSON body (vLLM's own errors, llama-server's) is never read as one.
 * A refusal that names a URL of the request refuses that one; one that names none (llama-server,
 * old vLLM) refuses every remote image of the request, since which one failed cannot be told.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { imageUrlsWhere, isRemoteUrl } from '../kit/image-part.js';
import { refusalSays } from '../kit/media-refusal.js';
import { errorMessageHead } from '../kit/error-text.js';

const SIGNATURES: readonly RegExp[] = [/\bFailed to download image\b/, /\bFailed to fetch media from URL\b/];

/**
 * A `file:` image URL (a local agent's screenshot by path), which neither backend reads unless
 * started to: llama-server (handle_media) "file:// URLs are not allowed unless --media-path is
 * specified", a 400; vLLM (multimodal/media/connector.py, _load_file_url) "Cannot load local files
 * without `--allowed-local-media-path`." or, outside it, "... must be a subpath of
 * `--allowed-local-media-path` ...", a 400. Neither names the URL: every file: image is refused.
 */
const LOCAL_SIGNATURES: readonly RegExp[] = [
  /\bfile:\/\/ URLs are not allowed\b/,
  /\bCannot load local files without\b/,
  /\bmust be a subpath of `?--allowed-local-media-path/,
];

const isFileUrl = (url: string): boolean => /^file:/i.test(url);

/**
 * The request's image URLs the backend reads itself (http, https and file:), in order, each once
 * (long ones told apart by digest: StringSet).
 */
export function remoteImageUrls(request: ChatCompletionRequest): string[] {
  return imageUrlsWhere(request, (url) => isRemoteUrl(url) || isFileUrl(url));
}

/**
 * Old vLLM's answer to an image it could not fetch, and to any other uncaught exception: a 500
 * whose whole body is the ASGI stack's plain "Internal Server Error" (no JSON, no detail).
 */
export function bareServerError(status: number, body: unknown): boolean {
  return (
    status === 500 && typeof body === 'string' && body.length < 64 && body.trim() === 'Internal Server Error'
  );
}

/**
 * The remote image URLs of `sent` the error says could not be fetched: the one it names, else
 * all of them; none when it is no fetch failure or `sent` has no remote image.
 */
export function unfetchedUrls(status: number, body: unknown, sent: ChatCompletionRequest): string[] {
  if (refusalSays(LOCAL_SIGNATURES, status, body)) return remoteImageUrls(sent).filter(isFileUrl);
  if (bareServerError(status, body)) return remoteImageUrls(sent).filter(isRemoteUrl);
  if (!refusalSays(SIGNATURES, status, body)) return [];
  const urls = remoteImageUrls(sent).filter(isRemoteUrl);
  const text = errorMessageHead(body, 4096);
  const named = urls.filter((u) => text.includes(`value=${u}`));
  return named.length > 0 ? named : urls;
}
