/**
 * The one explicit parser table. Adding a family = one file + one line here + one fixture
 * file (tests/fixtures/parsers/<name>.json). Names are user-facing config: kebab-case, stable.
 * Order here does not matter: the engine sorts by `priority` (lower first) at use.
 */
import { deepseek } from './formats/deepseek.js';
import type { FamilyParser } from './engine/family.js';
import { glm } from './formats/glm.js';
import { gptOss } from './formats/gpt-oss.js';
import { hermes } from './formats/hermes.js';
import { improvised } from './formats/improvised.js';
import { json } from './formats/json.js';
import { kimiK2 } from './formats/kimi-k2.js';
import { llama3Json } from './formats/llama3-json.js';
import { mistral } from './formats/mistral.js';
import { pythonic } from './formats/pythonic.js';
import { qwen3Coder } from './formats/qwen3-coder.js';
// long-tail families (issue 3, part 2)
import { apertus } from './formats/apertus.js';
import { commandR7b } from './formats/command-r7b.js';
import { gigachat3 } from './formats/gigachat3.js';
import { gigachat35 } from './formats/gigachat35.js';
import { granite } from './formats/granite.js';
import { granite20bFc } from './formats/granite-20b-fc.js';
import { hunyuan } from './formats/hunyuan.js';
import { longcat } from './formats/longcat.js';
import { minimax } from './formats/minimax.js';
import { minimaxM2 } from './formats/minimax-m2.js';
import { minimaxM3 } from './formats/minimax-m3.js';
import { nemotron } from './formats/nemotron.js';
import { phi4Mini } from './formats/phi4-mini.js';
import { qwen25Coder } from './formats/qwen25-coder.js';
import { seedOss } from './formats/seed-oss.js';
import { deepseekV32 } from './formats/deepseek-v32.js';
import { functionGemma } from './formats/function-gemma.js';
import { functionaryV31 } from './formats/functionary-v3-1.js';
import { functionaryV32 } from './formats/functionary-v3-2.js';
import { gemma4 } from './formats/gemma4.js';
import { hunyuanV3 } from './formats/hunyuan-v3.js';
import { internlm2 } from './formats/internlm2.js';
import { k2Horizon } from './formats/k2-horizon.js';
import { kimiK3 } from './formats/kimi-k3.js';
import { lfm2 } from './formats/lfm2.js';
import { minicpm } from './formats/minicpm.js';
import { olmo3 } from './formats/olmo3.js';
import { step3 } from './formats/step3.js';
import { xlam } from './formats/xlam.js';
// issue 11: prompt-opened reasoning
import { apriel } from './formats/apriel.js';
import { commandRPlus } from './formats/command-r-plus.js';
import { ling } from './formats/ling.js';
import { museGlimmer } from './formats/muse-glimmer.js';
import { dots } from './formats/dots.js';
import { plamo3 } from './formats/plamo3.js';
import { solarOpen2 } from './formats/solar-open2.js';
import { rwkv } from './formats/rwkv.js';
import { cwm } from './formats/cwm.js';
// issue 11: families from vLLM suites without a reader (fam-c)
import { internS1 } from './formats/intern-s1.js';
import { hyperclovax } from './formats/hyperclovax.js';
import { bracketArrow } from './formats/bracket-arrow.js';

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
  gigachat35,
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
  k2Horizon,
  kimiK3,
  lfm2,
  minicpm,
  olmo3,
  step3,
  xlam,
  apriel,
  commandRPlus,
  ling,
  museGlimmer,
  dots,
  plamo3,
  solarOpen2,
  rwkv,
  cwm,
  internS1,
  hyperclovax,
  bracketArrow,
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
