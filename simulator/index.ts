/**
 * The built-in backend simulator: an OpenAI-compatible server that reproduces the wire
 * behaviour of vLLM or llama-server, driven by a scripted model. Runnable standalone
 * (main.ts); imports nothing from toolproof's server code.
 */
import { startSimulator } from './http-server.js';
import type { Simulator, SimulatorOptions } from './types.js';

export { SCENARIO_HEADER } from './http-server.js';
export { renderLeak } from './leak-formats.js';
export { BUILT_IN_SCENARIOS, resolveScenario } from './scenarios.js';
export type {
  Behaviour,
  LeakFormat,
  LeakSpec,
  LlamaTemplate,
  Personality,
  RecordedAbort,
  RecordedRequest,
  ScenarioFn,
  ScenarioScript,
  ScenarioSpec,
  ScriptedCall,
  ScriptedError,
  Simulator,
  SimulatorOptions,
  TurnAction,
  TurnContext,
} from './types.js';
export { LEAK_FORMATS } from './types.js';

export function createSimulator(options: SimulatorOptions): Promise<Simulator> {
  return startSimulator(options);
}
