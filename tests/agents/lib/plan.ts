/**
 * The launcher's plan for a run straight to the backend: the agent's recipe (cli/launch/recipes.ts)
 * pointed at the backend's origin, with the suite's key and a fixed window, as a user who sets the
 * agent up by hand from docs/agents-setup.md would. One place for the agents configured from their
 * recipe (agents.ts) and the SDKs (sdk.ts).
 */
import { buildPlan, type LaunchPlan } from '../../../cli/launch/plan.js';
import { findRecipe } from '../../../cli/launch/recipes.js';
import type { AgentTarget } from './agents.js';

export const SUITE_KEY = 'sk-toolproof-agents-suite';

export function suitePlan(
  agent: string,
  target: AgentTarget,
  dir: string,
  userArgs: readonly string[] = [],
): LaunchPlan {
  const recipe = findRecipe(agent);
  if (!recipe) throw new Error(`${agent}: no recipe`);
  return buildPlan(
    recipe,
    {
      base: target.origin,
      model: target.model,
      window: 32768,
      maxOutput: 4096,
      key: SUITE_KEY,
      api: target.sdk?.api ?? recipe.apis[0]!,
      dir,
    },
    userArgs,
  );
}
