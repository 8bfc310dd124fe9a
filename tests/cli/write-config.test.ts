import { describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readConfigFile } from '../../server/config.js';
import type { ProbeReport } from '../../cli/probe/types.js';
import { renderConfig } from '../../cli/probe/write-config.js';

const report: ProbeReport = {
  version: 1,
  baseUrl: 'http://gpu-box:8000/v1',
  model: 'mistral-small',
  backend: { kind: 'unknown', viaToolproof: false },
  runs: 2,
  durationMs: 10,
  cells: [],
  leakFormats: [{ format: 'mistral', count: 2, recovered: 2 }],
  checks: [
    {
      id: 'non-nine-char-id',
      title: 'tool-call ids that are not 9 characters accepted',
      status: 'problem',
      detail: 'rejected (HTTP 400).',
      setting: { path: 'historyRepair.nineCharIds', value: true },
    },
  ],
  verdicts: [],
  settings: [
    { path: 'forceToolUse', value: true },
    { path: 'historyRepair.nineCharIds', value: true },
    { path: 'historyRepair.bridgeToolToUser', value: true },
  ],
};

describe("a new model's section", () => {
  it('nests dotted setting paths under the upstream', () => {
    const written = parse(renderConfig(null, report)) as { models: Record<string, unknown> };
    expect(written.models[report.model]).toEqual({
      upstream: 'http://gpu-box:8000/v1',
      forceToolUse: true,
      historyRepair: { nineCharIds: true, bridgeToolToUser: true },
    });
  });
});

describe('renderConfig', () => {
  it('writes a new file with the models section and the findings as a comment', () => {
    const text = renderConfig(null, report);
    expect(parse(text)).toEqual({
      models: {
        'mistral-small': {
          upstream: 'http://gpu-box:8000/v1',
          forceToolUse: true,
          historyRepair: { nineCharIds: true, bridgeToolToUser: true },
        },
      },
    });
    expect(text).toContain('# toolproof probe against http://gpu-box:8000/v1');
    expect(text).toContain('tool-call ids that are not 9 characters accepted: rejected (HTTP 400).');
  });

  it('merges into an existing file: other keys, models and comments stay; the model keeps its own keys', () => {
    const existing = [
      '# my config',
      'server: { port: 8080 }',
      'models:',
      '  other:',
      '    upstream: http://a/v1',
      '  mistral-small:',
      '    upstream: http://replica-1:8000/v1',
      '    upstreamModel: mistralai/Mistral-Small-3.2',
      '    forceToolUse: false',
      '    historyRepair: { mergeSameRole: true }',
      '',
    ].join('\n');
    const text = renderConfig(existing, report);
    const parsed = parse(text) as { server: unknown; models: Record<string, unknown> };
    expect(text.startsWith('# my config')).toBe(true);
    expect(parsed.server).toEqual({ port: 8080 });
    expect(parsed.models.other).toEqual({ upstream: 'http://a/v1' });
    expect(parsed.models['mistral-small']).toEqual({
      upstream: 'http://replica-1:8000/v1',
      upstreamModel: 'mistralai/Mistral-Small-3.2',
      forceToolUse: true,
      historyRepair: { mergeSameRole: true, nineCharIds: true, bridgeToolToUser: true },
    });
  });

  it("writes a file toolproof's own config loader accepts", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolproof-write-config-'));
    try {
      const file = join(dir, 'toolproof.yaml');
      await writeFile(file, renderConfig(null, report));
      const loaded = readConfigFile(file);
      expect(loaded.models?.['mistral-small']).toMatchObject({
        upstream: 'http://gpu-box:8000/v1',
        forceToolUse: true,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses to overwrite a file that is not a YAML mapping', () => {
    expect(() => renderConfig('- a\n- b\n', report)).toThrow(/not a YAML mapping/);
    expect(() => renderConfig('a: [\n', report)).toThrow(/not valid YAML/);
  });
});
