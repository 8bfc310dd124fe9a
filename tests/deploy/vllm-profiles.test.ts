/**
 * vLLM launch profiles (vllm/profiles/*.env) and the two launch scripts the Compose file uses.
 * The scripts run for real, with a stub in place of `vllm` / `llama-server` that records the
 * arguments it was given: what a profile says is what the backend gets.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PARSER_NAMES } from '../../parsers/registry.js';

const ROOT = join(import.meta.dirname, '..', '..');
const PROFILES_DIR = join(ROOT, 'vllm/profiles');
const VLLM_LAUNCH = join(ROOT, 'vllm/launch.sh');
const LLAMACPP_LAUNCH = join(ROOT, 'deploy/llamacpp/launch.sh');

/** The keys every profile sets (empty allowed where optional), in this order. */
const PROFILE_KEYS = [
  'VLLM_MODEL',
  'VLLM_TOOL_PARSER',
  'VLLM_REASONING_PARSER',
  'VLLM_CHAT_TEMPLATE',
  'VLLM_EXTRA_ARGS',
  'TOOLPROOF_PARSERS',
] as const;
const REQUIRED = ['VLLM_MODEL', 'VLLM_TOOL_PARSER', 'TOOLPROOF_PARSERS'];

/**
 * --tool-call-parser and --reasoning-parser names as vLLM registers them
 * (vllm/tool_parsers/__init__.py and vllm/reasoning/__init__.py in vllm-project/vllm); only the
 * ones the profiles may use.
 */
const VLLM_TOOL_PARSERS = new Set([
  'hermes',
  'qwen3_coder',
  'qwen3_xml',
  'llama3_json',
  'llama4_json',
  'llama4_pythonic',
  'pythonic',
  'mistral',
  'deepseek_v3',
  'deepseek_v31',
  'glm45',
  'glm47',
  'kimi_k2',
  'openai',
  'granite',
  'granite4',
  'granite-20b-fc',
]);
const VLLM_REASONING_PARSERS = new Set([
  'qwen3',
  'deepseek_r1',
  'deepseek_v3',
  'glm45',
  'glm47',
  'kimi_k2',
  'granite',
  'openai_gptoss',
  'mistral',
]);

function parseEnvFile(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq < 1) throw new Error(`not KEY=VALUE: ${line}`);
    vars.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return vars;
}

const profiles = readdirSync(PROFILES_DIR)
  .filter((f) => f.endsWith('.env'))
  .sort()
  .map((file) => ({
    name: file.replace(/\.env$/, ''),
    file,
    vars: parseEnvFile(readFileSync(join(PROFILES_DIR, file), 'utf8')),
  }));

const scratch = mkdtempSync(join(tmpdir(), 'toolproof-launch-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A stub binary that writes its arguments (one per line) and whether VLLM_API_KEY is set. */
function stub(name: string): { dir: string; out: string } {
  const dir = mkdtempSync(join(scratch, 'bin-'));
  const out = join(dir, 'argv');
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh\n: > "${out}"\nfor a in "$@"; do printf '%s\\n' "$a" >> "${out}"; done\n` +
      `echo "api-key-set=\${VLLM_API_KEY+yes}\${LLAMA_API_KEY+yes}" >> "${out}"\n`,
  );
  chmodSync(path, 0o755);
  return { dir, out };
}

function runVllmLaunch(env: Record<string, string>, args: string[] = []) {
  const { dir, out } = stub('vllm');
  const res = spawnSync('bash', [VLLM_LAUNCH, ...args], {
    env: { PATH: `${dir}:/usr/bin:/bin`, ...env },
    encoding: 'utf8',
  });
  const argv = res.status === 0 ? readFileSync(out, 'utf8').trimEnd().split('\n') : [];
  return { status: res.status, stderr: res.stderr, argv };
}

const template = join(scratch, 'template.jinja');
writeFileSync(template, '{{ messages }}');

describe('vllm/profiles', () => {
  it('covers the model families people serve', () => {
    const names = profiles.map((p) => p.name);
    for (const family of [
      'qwen2.5',
      'qwen3',
      'qwen3-coder',
      'llama3',
      'llama4',
      'mistral',
      'devstral',
      'deepseek-v3',
      'deepseek-v3.1',
      'deepseek-r1',
      'glm-4.5',
      'kimi-k2',
      'gpt-oss',
      'granite',
      'hermes',
    ]) {
      expect(names).toContain(family);
    }
  });

  it.each(profiles)('$file is complete and names real parsers', ({ vars }) => {
    expect([...vars.keys()]).toEqual([...PROFILE_KEYS]);
    for (const key of REQUIRED) expect(vars.get(key), key).not.toBe('');
    for (const [key, value] of vars) {
      // docker-compose 1.x keeps quotes in env_file values literally; Compose v2 strips them.
      expect(value, key).not.toMatch(/^["']|["']$/);
      expect(value, key).toBe(value.trim());
    }
    expect(vars.get('VLLM_MODEL')).toMatch(/^[\w.-]+\/[\w.-]+$/);
    expect(VLLM_TOOL_PARSERS).toContain(vars.get('VLLM_TOOL_PARSER'));
    const reasoning = vars.get('VLLM_REASONING_PARSER')!;
    if (reasoning) expect(VLLM_REASONING_PARSERS).toContain(reasoning);
    const tpl = vars.get('VLLM_CHAT_TEMPLATE')!;
    if (tpl)
      expect(tpl).toMatch(/^(\/vllm-workspace\/examples\/tool_chat_template_[\w.]+\.jinja|\/templates\/.+)$/);
    for (const family of vars.get('TOOLPROOF_PARSERS')!.split(',')) expect(PARSER_NAMES).toContain(family);
  });

  it('vllm/README.md has a row per profile with its parser flags and toolproof families', () => {
    const readme = readFileSync(join(ROOT, 'vllm/README.md'), 'utf8');
    for (const { file, vars } of profiles) {
      const row = readme.split('\n').find((l) => l.startsWith('|') && l.includes(`profiles/${file}`));
      expect(row, `no table row for ${file}`).toBeDefined();
      expect(row).toContain(`\`${vars.get('VLLM_TOOL_PARSER')}\``);
      const reasoning = vars.get('VLLM_REASONING_PARSER');
      if (reasoning) expect(row).toContain(`\`${reasoning}\``);
      for (const family of vars.get('TOOLPROOF_PARSERS')!.split(',')) expect(row).toContain(`\`${family}\``);
    }
  });
});

describe('vllm/launch.sh', () => {
  it.each(profiles)('turns $file into vllm serve flags', ({ vars }) => {
    const env = Object.fromEntries(vars);
    if (env.VLLM_CHAT_TEMPLATE) env.VLLM_CHAT_TEMPLATE = template;
    const { status, stderr, argv } = runVllmLaunch(env);
    expect(status, stderr).toBe(0);
    expect(argv.slice(0, 2)).toEqual(['serve', vars.get('VLLM_MODEL')]);
    const flag = (name: string) => argv[argv.indexOf(name) + 1];
    expect(argv).toContain('--enable-auto-tool-choice');
    expect(flag('--tool-call-parser')).toBe(vars.get('VLLM_TOOL_PARSER'));
    expect(flag('--port')).toBe('8000');
    expect(flag('--host')).toBe('0.0.0.0');
    if (vars.get('VLLM_REASONING_PARSER'))
      expect(flag('--reasoning-parser')).toBe(vars.get('VLLM_REASONING_PARSER'));
    else expect(argv).not.toContain('--reasoning-parser');
    if (vars.get('VLLM_CHAT_TEMPLATE')) expect(flag('--chat-template')).toBe(template);
    else expect(argv).not.toContain('--chat-template');
    for (const extra of (vars.get('VLLM_EXTRA_ARGS') ?? '').split(/\s+/).filter(Boolean))
      expect(argv).toContain(extra);
  });

  it('site settings from .env win: model override, served name, VLLM_ARGS and script arguments last', () => {
    const { status, argv } = runVllmLaunch(
      {
        VLLM_MODEL: 'Qwen/Qwen3-8B',
        VLLM_MODEL_OVERRIDE: 'Qwen/Qwen3-8B-AWQ',
        VLLM_TOOL_PARSER: 'hermes',
        VLLM_SERVED_MODEL_NAME: 'qwen3',
        VLLM_EXTRA_ARGS: '--trust-remote-code',
        VLLM_ARGS: '--tensor-parallel-size 2  --max-model-len 32768',
        VLLM_API_KEY: '',
      },
      ['--chat-template-kwargs', '{"enable_thinking": false}'],
    );
    expect(status).toBe(0);
    expect(argv[1]).toBe('Qwen/Qwen3-8B-AWQ');
    expect(argv[argv.indexOf('--served-model-name') + 1]).toBe('qwen3');
    // Profile extras, then VLLM_ARGS (split on whitespace), then the script's own arguments verbatim.
    expect(argv.slice(-8, -1)).toEqual([
      '--trust-remote-code',
      '--tensor-parallel-size',
      '2',
      '--max-model-len',
      '32768',
      '--chat-template-kwargs',
      '{"enable_thinking": false}',
    ]);
    // An empty key from Compose must not reach vLLM as "a key that is the empty string".
    expect(argv.at(-1)).toBe('api-key-set=');
  });

  it('keeps a non-empty VLLM_API_KEY in the environment, never on the command line', () => {
    const { status, argv } = runVllmLaunch({
      VLLM_MODEL: 'a/b',
      VLLM_TOOL_PARSER: 'hermes',
      VLLM_API_KEY: 'sekrit',
    });
    expect(status).toBe(0);
    expect(argv.at(-1)).toBe('api-key-set=yes');
    expect(argv.join(' ')).not.toContain('sekrit');
  });

  it('fails fast, with a message, on an empty profile or a missing chat template', () => {
    const empty = runVllmLaunch({});
    expect(empty.status).toBe(64);
    expect(empty.stderr).toContain('TOOLPROOF_PROFILE');
    const noTemplate = runVllmLaunch({
      VLLM_MODEL: 'a/b',
      VLLM_TOOL_PARSER: 'llama3_json',
      VLLM_CHAT_TEMPLATE: '/nonexistent/tool_chat_template.jinja',
    });
    expect(noTemplate.status).toBe(64);
    expect(noTemplate.stderr).toContain('/nonexistent/tool_chat_template.jinja');
  });
});

describe('deploy/llamacpp/launch.sh', () => {
  function runLlamaLaunch(env: Record<string, string>) {
    const { dir, out } = stub('llama-server');
    const res = spawnSync('sh', [LLAMACPP_LAUNCH], {
      env: { PATH: '/usr/bin:/bin', LLAMA_SERVER_BIN: join(dir, 'llama-server'), ...env },
      encoding: 'utf8',
    });
    const argv = res.status === 0 ? readFileSync(out, 'utf8').trimEnd().split('\n') : [];
    return { status: res.status, stderr: res.stderr, argv };
  }

  it('starts llama-server with --jinja, --metrics, all layers on the GPU and the HF repo', () => {
    const { status, stderr, argv } = runLlamaLaunch({
      LLAMACPP_HF_REPO: 'unsloth/Qwen3-8B-GGUF:Q4_K_M',
      LLAMACPP_CTX_SIZE: '16384',
      LLAMACPP_ARGS: '--parallel 4',
      LLAMA_API_KEY: '',
    });
    expect(status, stderr).toBe(0);
    expect(argv.slice(0, 2)).toEqual(['-hf', 'unsloth/Qwen3-8B-GGUF:Q4_K_M']);
    for (const flag of ['--jinja', '--metrics', '--parallel']) expect(argv).toContain(flag);
    expect(argv[argv.indexOf('--port') + 1]).toBe('8080');
    expect(argv[argv.indexOf('-c') + 1]).toBe('16384');
    expect(argv.at(-1)).toBe('api-key-set=');
  });

  it('refuses to start without a model, or with a GGUF file that is not in /models', () => {
    const none = runLlamaLaunch({});
    expect(none.status).toBe(64);
    expect(none.stderr).toContain('LLAMACPP_MODEL_FILE or LLAMACPP_HF_REPO');
    const missing = runLlamaLaunch({ LLAMACPP_MODEL_FILE: 'toolproof-test-missing.gguf' });
    expect(missing.status).toBe(64);
    expect(missing.stderr).toContain('/models/toolproof-test-missing.gguf');
  });
});
