/**
 * Standalone entry: `npx tsx simulator/main.ts --personality vllm --port 8001`.
 * Prints the base URL and runs until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { createSimulator } from './index.js';
import { BUILT_IN_SCENARIOS } from './scenarios.js';
import type { LlamaTemplate, Personality, SimulatorOptions } from './types.js';

const USAGE = `Usage: tsx simulator/main.ts [options]
  --personality vllm|llama-server   wire behaviour to reproduce (default vllm)
  --host HOST                       default 127.0.0.1
  --port PORT                       default 8001 (0 = any free port)
  --scenario NAME|JSON              ${BUILT_IN_SCENARIOS.join(', ')} or inline JSON (default demo)
  --model NAME                      reported model name
  --reject-required                 answer tool_choice "required" with the backend's real 400
  --ignore-required                 treat "required" like "auto"
  --strict-history                  reject calls without results and orphan tool results
  --nine-char-ids                   Mistral rule: tool-call ids must be 9 alphanumerics
  --template chatml|qwen3-coder|llama3|mistral   llama-server chat template rules
  --api-key KEY                     require this key (--api-key of either backend)
  --no-metrics                      llama-server without --metrics (/metrics is 501)
  --legacy-errors                   vLLM's old flat error body {"object":"error",...}
  --check-model                     vLLM: 404 for a model name it does not serve
  --reasoning-field NAME            vLLM: reasoning_content (default) or reasoning (current vLLM)
  --no-prefix-cache                 prefill every prompt from zero (no prefix reuse)
  --prompt-tokens-details           vLLM --enable-prompt-tokens-details (usage reports cached_tokens)`;

export function optionsFromArgv(argv: string[]): SimulatorOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      personality: { type: 'string', default: 'vllm' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '8001' },
      scenario: { type: 'string', default: 'demo' },
      model: { type: 'string' },
      'reject-required': { type: 'boolean', default: false },
      'ignore-required': { type: 'boolean', default: false },
      'strict-history': { type: 'boolean', default: false },
      'nine-char-ids': { type: 'boolean', default: false },
      template: { type: 'string' },
      'api-key': { type: 'string' },
      'no-metrics': { type: 'boolean', default: false },
      'legacy-errors': { type: 'boolean', default: false },
      'check-model': { type: 'boolean', default: false },
      'reasoning-field': { type: 'string', default: 'reasoning_content' },
      'no-prefix-cache': { type: 'boolean', default: false },
      'prompt-tokens-details': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) throw new Error(USAGE);
  const personality = values.personality;
  if (personality !== 'vllm' && personality !== 'llama-server') {
    throw new Error(
      `--personality must be vllm or llama-server, got ${JSON.stringify(personality)}\n${USAGE}`,
    );
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be 0-65535, got ${values.port}`);
  const template = values.template;
  if (template !== undefined && !['chatml', 'qwen3-coder', 'llama3', 'mistral'].includes(template)) {
    throw new Error(`--template must be chatml, qwen3-coder, llama3 or mistral, got ${template}`);
  }
  const reasoningField = values['reasoning-field'];
  if (reasoningField !== 'reasoning_content' && reasoningField !== 'reasoning') {
    throw new Error(`--reasoning-field must be reasoning_content or reasoning, got ${reasoningField}`);
  }
  return {
    personality: personality as Personality,
    host: values.host,
    port,
    scenario: values.scenario,
    modelName: values.model,
    rejectRequired: values['reject-required'],
    ignoreRequired: values['ignore-required'],
    strictHistory: values['strict-history'],
    nineCharIds: values['nine-char-ids'],
    template: template as LlamaTemplate | undefined,
    apiKey: values['api-key'],
    metrics: !values['no-metrics'],
    errorShape: values['legacy-errors'] ? 'legacy' : 'nested',
    checkModel: values['check-model'],
    reasoningField,
    ...(values['no-prefix-cache'] ? { prefixCache: false as const } : {}),
    ...(values['prompt-tokens-details'] ? { promptTokensDetails: true } : {}),
  };
}

async function main(): Promise<void> {
  let sim: Awaited<ReturnType<typeof createSimulator>>;
  try {
    sim = await createSimulator(optionsFromArgv(process.argv.slice(2)));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  console.log(`toolproof simulator (${sim.personality}) listening on ${sim.url}`);
  const stop = () => {
    sim.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  void main();
}
