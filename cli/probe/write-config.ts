/**
 * `--write-config`: the per-model YAML section the findings call for, in the shape
 * server/config.ts validates: `models: { NAME: { upstream: BASE_URL, ...settings } }`.
 * Merged into an existing config file when there is one: other models, keys and comments stay;
 * in the probed model's own section only the settings the findings name are set (an existing
 * upstream, apiKey or upstreamModel is kept). Pure: text in, text out.
 */
import { Document, isMap, parseDocument } from 'yaml';
import type { ProbeReport, SettingChange } from './types.js';

function modelSection(baseUrl: string, settings: readonly SettingChange[]): Record<string, unknown> {
  const section: Record<string, unknown> = { upstream: baseUrl };
  for (const setting of settings) {
    const keys = setting.path.split('.');
    let target = section;
    for (const key of keys.slice(0, -1)) {
      const next = target[key];
      if (typeof next === 'object' && next !== null && !Array.isArray(next))
        target = next as Record<string, unknown>;
      else {
        const created: Record<string, unknown> = {};
        target[key] = created;
        target = created;
      }
    }
    const last = keys[keys.length - 1];
    if (last) target[last] = setting.value;
  }
  return section;
}

function findingsComment(report: ProbeReport): string {
  const lines = [` toolproof probe against ${report.baseUrl} (${report.runs} run(s) per cell):`];
  for (const check of report.checks) {
    if (check.status === 'problem') lines.push(`   ${check.title}: ${check.detail}`);
  }
  for (const leak of report.leakFormats) lines.push(`   leaked ${leak.format} tool calls (${leak.count}×)`);
  if (lines.length === 1) lines.push('   no problems found');
  return lines.join('\n');
}

/** The config text with the model's section written (added, or merged into). Throws on an unusable existing file. */
export function renderConfig(existing: string | null, report: ProbeReport): string {
  let doc: Document = new Document({});
  if (existing !== null && existing.trim() !== '') {
    const parsed = parseDocument(existing);
    if (parsed.errors.length > 0)
      throw new Error(`the existing config is not valid YAML: ${parsed.errors[0]?.message}`);
    if (parsed.contents !== null && !isMap(parsed.contents))
      throw new Error('the existing config is not a YAML mapping');
    if (parsed.contents !== null) doc = parsed;
  }
  const models = doc.get('models');
  if (models !== undefined && models !== null && !isMap(models))
    throw new Error('"models" in the existing config is not a mapping');
  const current = doc.getIn(['models', report.model]);
  if (isMap(current)) {
    if (!current.has('upstream')) current.set('upstream', report.baseUrl);
    for (const setting of report.settings)
      doc.setIn(['models', report.model, ...setting.path.split('.')], setting.value);
    current.commentBefore = findingsComment(report);
  } else {
    const node = doc.createNode(modelSection(report.baseUrl, report.settings));
    node.commentBefore = findingsComment(report);
    doc.setIn(['models', report.model], node);
  }
  return doc.toString();
}
