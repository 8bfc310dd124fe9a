/**
 * The backend fetching a remote image_url itself (option `unreachableImageHosts`): an image on a
 * listed host answers as an expired signed URL does (403), and the backend refuses the request
 * with its own error. llama-server (tools/server, its chat parser's image download): a 400
 * invalid_request_error "Failed to download image", naming no URL. vLLM
 * (vllm/multimodal/media/connector.py, _wrap_media_fetch_error): a 422 UnprocessableEntityError
 * "Failed to fetch media from URL: HTTP 403 error (parameter=image_url, value=<url>)". Both fetch
 * in message order and stop at the first failure. vLLM before that (bareImageFetchError) let the
 * fetch's exception escape: the ASGI stack's bare 500, text/plain "Internal Server Error". A `file:`
 * URL is refused by both (localFileError).
 */
import type { SimError } from './personality.js';
import type { SimulatorOptions } from './types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first remote image of `messages` on an unreachable host, refused as the backend does; else null. */
export function imageFetchError(messages: unknown[], options: SimulatorOptions): SimError | null {
  const hosts = options.unreachableImageHosts ?? [];
  for (const m of messages) {
    if (!isObj(m) || !Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObj(p) || p.type !== 'image_url') continue;
      const url = isObj(p.image_url) ? p.image_url.url : p.image_url;
      if (typeof url === 'string' && /^file:/i.test(url)) return localFileError(options);
      if (hosts.length === 0 || typeof url !== 'string' || !/^https?:\/\//.test(url)) continue;
      let host: string;
      try {
        host = new URL(url).host;
      } catch {
        continue;
      }
      if (!hosts.includes(host)) continue;
      if (options.personality === 'vllm' && options.bareImageFetchError)
        return { status: 500, message: 'Internal Server Error', plain: true };
      return options.personality === 'vllm'
        ? {
            status: 422,
            type: 'UnprocessableEntityError',
            message: `Failed to fetch media from URL: HTTP 403 error (parameter=image_url, value=${url})`,
            param: 'image_url',
          }
        : { status: 400, type: 'invalid_request_error', message: 'Failed to download image' };
    }
  }
  return null;
}

/**
 * A `file:` image URL, which neither backend reads unless started to (llama-server's --media-path,
 * vLLM's --allowed-local-media-path; the simulator is never): llama-server's handle_media throws
 * invalid_argument (a 400), vLLM's connector a RuntimeError its chat preprocessing answers as a 400.
 */
function localFileError(options: SimulatorOptions): SimError {
  return options.personality === 'vllm'
    ? {
        status: 400,
        type: 'BadRequestError',
        message: 'Cannot load local files without `--allowed-local-media-path`.',
      }
    : {
        status: 400,
        type: 'invalid_request_error',
        message: 'file:// URLs are not allowed unless --media-path is specified',
      };
}
