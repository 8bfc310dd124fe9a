import { describe, expect, it } from 'vitest';
import { carriesImages, refusesImages } from '../../policies/images/refusal.js';

describe('refusesImages: the backend refused an image because its model cannot see', () => {
  it('reads vLLM and llama-server refusals, in their shapes', () => {
    const vllm = {
      error: { message: 'Qwen/Qwen3-8B is not a multimodal model None', type: 'BadRequestError', code: 400 },
    };
    expect(refusesImages(400, vllm)).toBe(true);
    expect(refusesImages(400, { object: 'error', message: 'm is not a multimodal model', code: 400 })).toBe(
      true,
    );
    expect(
      refusesImages(400, { error: { message: 'At most 0 image(s) may be provided in one prompt.' } }),
    ).toBe(true);
    const llama = {
      error: {
        code: 500,
        message:
          'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
        type: 'server_error',
      },
    };
    expect(refusesImages(500, llama)).toBe(true);
    expect(refusesImages(400, 'x is not a multimodal model')).toBe(true);
  });

  it('never a status alone, another message, or a success', () => {
    expect(refusesImages(400, { error: { message: 'Invalid image: cannot identify image file' } })).toBe(
      false,
    );
    expect(refusesImages(500, { error: { message: 'CUDA out of memory' } })).toBe(false);
    expect(refusesImages(400, {})).toBe(false);
    expect(refusesImages(400, null)).toBe(false);
    expect(refusesImages(200, { error: { message: 'm is not a multimodal model' } })).toBe(false);
  });

  it('reads only the head of a huge message', () => {
    const huge = `${'a'.repeat(5000)} is not a multimodal model`;
    expect(refusesImages(400, { error: { message: huge } })).toBe(false);
  });
});

describe('carriesImages', () => {
  it('finds an image part in any message, and nothing in text', () => {
    const img = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    expect(carriesImages({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).toBe(false);
    expect(
      carriesImages({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }),
    ).toBe(false);
    expect(
      carriesImages({ model: 'm', messages: [{ role: 'tool', tool_call_id: 'c', content: [img] }] } as never),
    ).toBe(true);
  });
});
