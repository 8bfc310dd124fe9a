import { describe, expect, it } from 'vitest';
import { optionsFromArgv } from '../../simulator/main.js';

describe('simulator command line', () => {
  it('has usable defaults', () => {
    expect(optionsFromArgv([])).toMatchObject({
      personality: 'vllm',
      host: '127.0.0.1',
      port: 8001,
      scenario: 'demo',
      metrics: true,
    });
  });

  it('maps every flag', () => {
    const o = optionsFromArgv([
      '--personality',
      'llama-server',
      '--port',
      '0',
      '--scenario',
      'leak-glm',
      '--model',
      'm.gguf',
      '--reject-required',
      '--strict-history',
      '--nine-char-ids',
      '--template',
      'mistral',
      '--api-key',
      'k',
      '--no-metrics',
    ]);
    expect(o).toMatchObject({
      personality: 'llama-server',
      port: 0,
      scenario: 'leak-glm',
      modelName: 'm.gguf',
      rejectRequired: true,
      strictHistory: true,
      nineCharIds: true,
      template: 'mistral',
      apiKey: 'k',
      metrics: false,
    });
    expect(
      optionsFromArgv([
        '--legacy-errors',
        '--check-model',
        '--ignore-required',
        '--reasoning-field',
        'reasoning',
      ]),
    ).toMatchObject({
      reasoningField: 'reasoning',
      errorShape: 'legacy',
      checkModel: true,
      ignoreRequired: true,
    });
  });

  it('fails fast with one precise message per bad flag', () => {
    expect(() => optionsFromArgv(['--personality', 'tgi'])).toThrow(
      /--personality must be vllm or llama-server/,
    );
    expect(() => optionsFromArgv(['--port', 'x'])).toThrow(/--port must be 0-65535/);
    expect(() => optionsFromArgv(['--template', 'gemma'])).toThrow(/--template must be/);
    expect(() => optionsFromArgv(['--reasoning-field', 'thoughts'])).toThrow(/--reasoning-field must be/);
    expect(() => optionsFromArgv(['--bogus'])).toThrow();
  });
});
