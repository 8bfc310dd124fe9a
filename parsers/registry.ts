/**
 * The one explicit parser table. Adding a family = one file + one line here + one fixture
 * file (tests/fixtures/parsers/<name>.json). Names are user-facing config: kebab-case, stable.
 * Order here does not matter: the engine sorts by `priority` (lower first) at use.
 */
import { deepseek } from './deepseek.js';
import type { FamilyParser } from './family.js';
import { glm } from './glm.js';
import { gptOss } from './gpt-oss.js';
import { hermes } from './hermes.js';
import { improvised } from './improvised.js';
import { json } from './json.js';
import { kimiK2 } from './kimi-k2.js';
import { llama3Json } from './llama3-json.js';
import { mistral } from './mistral.js';
import { pythonic } from './pythonic.js';
import { qwen3Coder } from './qwen3-coder.js';
// long-tail families (issue 3, part 2)
import { apertus } from './apertus.js';
import { commandR7b } from './command-r7b.js';
import { gigachat3 } from './gigachat3.js';
import { granite } from './granite.js';
import { granite20bFc } from './granite-20b-fc.js';
import { hunyuan } from './hunyuan.js';
import { longcat } from './longcat.js';
import { minimax } from './minimax.js';
import { minimaxM2 } from './minimax-m2.js';
import { minimaxM3 } from './minimax-m3.js';
import { nemotron } from './nemotron.js';
import { phi4Mini } from './phi4-mini.js';
import { qwen25Coder } from './qwen25-coder.js';
import { seedOss } from './seed-oss.js';
import { deepseekV32 } from './deepseek-v32.js';
import { functionGemma } from './function-gemma.js';
import { functionaryV31 } from './functionary-v3-1.js';
import { functionaryV32 } from './functionary-v3-2.js';
import { gemma4 } from './gemma4.js';
import { hunyuanV3 } from './hunyuan-v3.js';
import { internlm2 } from './internlm2.js';
import { kimiK3 } from './kimi-k3.js';
import { lfm2 } from './lfm2.js';
import { minicpm } from './minicpm.js';
import { olmo3 } from './olmo3.js';
import { step3 } from './step3.js';
import { xlam } from './xlam.js';

export const PARSERS: readonly FamilyParser[] = [
  hermes,
  qwen3Coder,
  glm,
  llama3Json,
  pythonic,
  mistral,
  deepseek,
  kimiK2,
  gptOss,
  json,
  improvised,
  apertus,
  commandR7b,
  gigachat3,
  granite,
  granite20bFc,
  hunyuan,
  longcat,
  minimax,
  minimaxM2,
  minimaxM3,
  nemotron,
  phi4Mini,
  qwen25Coder,
  seedOss,
  deepseekV32,
  functionGemma,
  functionaryV31,
  functionaryV32,
  gemma4,
  hunyuanV3,
  internlm2,
  kimiK3,
  lfm2,
  minicpm,
  olmo3,
  step3,
  xlam,
];

export const PARSER_NAMES: readonly string[] = PARSERS.map((p) => p.name);

/** Looks up parsers by name ('all' = every one). Throws on an unknown name (config validation calls this). */
export function selectParsers(names: readonly string[] | 'all' | undefined): readonly FamilyParser[] {
  if (names === undefined || names === 'all') return PARSERS;
  return names.map((n) => {
    const p = PARSERS.find((x) => x.name === n);
    if (!p) throw new Error(`unknown parser ${JSON.stringify(n)}; known: ${PARSER_NAMES.join(', ')}`);
    return p;
  });
}
