/**
 * The docs tell the truth about settings, metrics, routes, config keys and links, both ways where
 * it makes sense. Every list here is derived from the code or the docs themselves, never copied:
 * - environment variables: every `TOOLPROOF_*` / `OTEL_*` name the server, the CLI and the
 *   scripts spell is documented; every `TOOLPROOF_*` name a doc spells exists in the code (a
 *   removed or misspelt one fails);
 * - metrics: every `toolproof_*` metric a real app registers is a row of docs/metrics.md with the
 *   labels it has; every `toolproof_*` name and `toolproof:*` recording rule a doc or the Grafana
 *   dashboard spells exists;
 * - routes: every route of the app's OpenAPI document is documented, and is a row of docs/api.md's
 *   endpoint table (whose last row sends anything else upstream); every inspector API path a doc
 *   spells is a route;
 * - defaults: every per-model setting is a row of docs/configuration.md's table with its default;
 *   every variable a doc's table gives a default, set to it, leaves loadConfig's result unchanged;
 * - config keys: every key of the YAML schema (server/config.ts) is documented, and every
 *   toolproof config block in the docs passes that schema (a documented key it rejects fails);
 * - error codes: every `TP_ERR_*` of protocol/errors.ts is documented, and every one a doc
 *   names is in it;
 * - the agent suite: the packages docs/agents-setup.md says the install pins, and lets run a
 *   postinstall script, are as many as scripts/install-agents.mjs's;
 * - links: every relative link of the user docs points at a file that exists, and its `#anchor`
 *   at a heading of that file.
 * File reads and one app built, not listening: about 0.5 s of CPU in a fresh process on the
 * loaded 2-core box, 0.3 s of it the app's first build (a worker that built one before pays less).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ERROR_CATALOGUE } from '../../protocol/errors.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { buildApp } from '../../server/app.js';
import { fileSchema, fileValidator, loadConfig } from '../../server/config.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Files under `dir` (relative to the root) whose name passes `keep`, recursively. */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
    .map((f) => join(dir, f))
    .filter((f) => keep(f) && !f.includes('node_modules') && statSync(join(ROOT, f)).isFile());
}

/** The docs a user reads: the README, docs/, and the READMEs beside the code they describe. */
const USER_DOCS = [
  'README.md',
  ...filesUnder('docs', (f) => f.endsWith('.md')),
  ...['cli', 'deploy', 'vllm', 'simulator', 'parsers', 'policies'].flatMap((d) =>
    filesUnder(d, (f) => f.endsWith('.md')),
  ),
];
const docText = new Map(USER_DOCS.map((f) => [f, read(f)]));
const allDocs = [...docText.values()].join('\n');

type Registered = Map<string, { type: string; labels: string[] }>;

/** What a real app serves: its routes (its OpenAPI document: the inspector's page and /docs's UI are not in it) and its metrics. */
const app = { paths: [] as string[], metrics: new Map() as Registered };

beforeAll(async () => {
  // No request is made: the upstream is named, never reached.
  const built = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
    logger: false,
  });
  await built.ready();
  app.paths = Object.keys((built.swagger() as { paths: Record<string, unknown> }).paths);
  for (const m of built.toolproof.metrics.registry.getMetricsAsArray()) {
    // prom-client's metric objects carry these; its typings name only some.
    const { name, type, labelNames } = m as unknown as { name: string; type: string; labelNames: string[] };
    if (name.startsWith('toolproof_')) app.metrics.set(name, { type, labels: [...labelNames].sort() });
  }
  await built.close();
});

/** Every distinct match of `re` (global, group 1 when it has one) in `text`. */
function matches(text: string, re: RegExp): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(re)) out.add(m[1] ?? m[0]);
  return out;
}

// ---- environment variables ------------------------------------------------------------------

/** A whole name: `OTEL_BSP_*` (a family) or `TOOLPROOF_` alone match nothing. */
const ENV_NAME = /\b((?:TOOLPROOF|OTEL)_[A-Z0-9_]*[A-Z0-9])\b(?!_?\*)/g;
const isSource = (f: string) => /\.(ts|mjs|js)$/.test(f) && !f.endsWith('.test.ts');

/** What the server, the CLI and the user-run scripts spell: settings read, or written for agents. */
const CODE_SOURCES = ['server', 'cli', 'scripts'].flatMap((d) => filesUnder(d, isSource));

/** Names in that code that are not settings anyone sets, each with where and why. */
const NOT_SETTINGS: Record<string, { file: string; why: string }> = {
  TOOLPROOF_BODY: { file: 'server/capture/query.ts', why: "the heredoc marker of the inspector's curl" },
  TOOLPROOF_HEADER: { file: 'cli/probe/http.ts', why: "a constant's name" },
  TOOLPROOF_CLUSTER_WORKER: {
    file: 'server/group-admission.ts',
    why: 'set by the cluster primary on its own workers',
  },
  TOOLPROOF_CLUSTER_RELAY_DIR: {
    file: 'server/worker-relay.ts',
    why: "set by the cluster primary on its own workers: their private sockets' directory",
  },
};

/**
 * Where else a name a doc spells may legitimately live: the deploy files (docker-compose's own
 * variables), the test harness (TOOLPROOF_FUZZ_RUNS, the agents suite's switches).
 */
const OTHER_SOURCES = [
  ...['tests', 'deploy', 'vllm', '.ci', 'simulator', 'bench'].flatMap((d) =>
    filesUnder(
      d,
      (f) =>
        /(\.(ts|mjs|js|sh|ya?ml|env)|\/run)$/.test(f) &&
        !f.startsWith(join('tests', 'docs')) &&
        !f.includes('fixtures'),
    ),
  ),
  ...['docker-compose.yml', 'Dockerfile', '.env.example', 'package.json'].filter((f) =>
    existsSync(join(ROOT, f)),
  ),
];

describe('docs: environment variables', () => {
  const codeText = CODE_SOURCES.map(read).join('\n');
  const readByCode = matches(codeText, ENV_NAME);
  const settings = [...readByCode].filter((n) => !(n in NOT_SETTINGS)).sort();
  const known = new Set([...readByCode, ...matches(OTHER_SOURCES.map(read).join('\n'), ENV_NAME)]);

  it('the scan finds the settings (a broken scan would pass everything)', () => {
    expect(CODE_SOURCES.length).toBeGreaterThan(50);
    for (const n of [
      'TOOLPROOF_UPSTREAM_URL',
      'TOOLPROOF_WORKERS',
      'OTEL_TRACES_SAMPLER',
      'TOOLPROOF_PROBE_API_KEY',
    ])
      expect(settings).toContain(n);
    expect(settings.length).toBeGreaterThan(40);
  });

  it('the names that are not settings still exist where the list says', () => {
    for (const [name, { file }] of Object.entries(NOT_SETTINGS)) expect(read(file), name).toContain(name);
  });

  it('every variable the server, the CLI and the scripts read (or write for an agent) is documented', () => {
    const documented = matches(allDocs, ENV_NAME);
    expect(settings.filter((n) => !documented.has(n))).toEqual([]);
  });

  it('every TOOLPROOF_* variable a doc names exists in the code (no removed or misspelt names)', () => {
    const problems: string[] = [];
    for (const [file, text] of docText)
      for (const n of matches(text, ENV_NAME))
        if (n.startsWith('TOOLPROOF_') && !known.has(n)) problems.push(`${file}: ${n}`);
    expect(problems).toEqual([]);
  });
});

// ---- metrics --------------------------------------------------------------------------------

const HISTOGRAM_SUFFIX = /_(bucket|sum|count)$/;

/** docs/metrics.md's table: each row's names (`a` / `b` share a row) and its labels. */
function metricsTable(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of read('docs/metrics.md').split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !cells[1]!.startsWith('`toolproof_')) continue;
    const labels = cells[2] === '–' || cells[2] === '-' || cells[2] === '' ? [] : cells[2]!.split(/,\s*/);
    for (const n of matches(cells[1]!, /`(toolproof_[a-z0-9_]+)`/g)) rows.set(n, labels.sort());
  }
  return rows;
}

/** The Prometheus recording rules deploy/prometheus/alerts.yml defines. */
function recordingRules(): Set<string> {
  const doc = parseYaml(read('deploy/prometheus/alerts.yml')) as {
    groups: { rules: { record?: string }[] }[];
  };
  return new Set(doc.groups.flatMap((g) => g.rules.flatMap((r) => (r.record ? [r.record] : []))));
}

describe('docs: metrics', () => {
  it('every metric toolproof registers is a row of docs/metrics.md, with the labels it has', () => {
    const registered = app.metrics;
    expect(registered.size).toBeGreaterThan(30);
    const table = metricsTable();
    const problems: string[] = [];
    for (const [name, { labels }] of registered) {
      const documented = table.get(name);
      if (!documented) problems.push(`${name}: no row`);
      else if (documented.join(' ') !== labels.join(' '))
        problems.push(`${name}: documented labels [${documented}], registered [${labels}]`);
    }
    for (const name of table.keys())
      if (!registered.has(name)) problems.push(`${name}: a row, not registered`);
    expect(problems).toEqual([]);
  });

  it('every toolproof_* metric and toolproof:* rule a doc or the dashboard names exists', () => {
    const registered = app.metrics;
    const rules = recordingRules();
    const exists = (n: string) => {
      if (n.startsWith('toolproof:')) return rules.has(n);
      if (registered.has(n)) return true;
      const base = n.replace(HISTOGRAM_SUFFIX, '');
      return base !== n && registered.get(base)?.type === 'histogram';
    };
    const sources: [string, string][] = [
      ...docText,
      ['deploy/grafana/dashboards/toolproof.json', read('deploy/grafana/dashboards/toolproof.json')],
    ];
    const problems: string[] = [];
    // `toolproof:8787` is a host and port, not a rule.
    for (const [file, text] of sources)
      for (const n of matches(text, /\b(toolproof(?:_[a-z0-9_]*[a-z0-9]|:[a-z_][a-z0-9_:]*[a-z0-9]))\b/g))
        if (!exists(n)) problems.push(`${file}: ${n}`);
    expect(problems).toEqual([]);
  });
});

// ---- defaults -------------------------------------------------------------------------------

/** The rows of a markdown table under `heading` (up to the next blank line): the cells of each. */
function tableAfter(text: string, heading: string): string[][] {
  const start = text.indexOf(heading);
  expect(start, heading).toBeGreaterThan(-1);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split(' | ').map((c) => c.replace(/^\|\s*|\s*\|$/g, '').trim()));
  }
  return rows;
}

/** A default cell's value: its first `code`, else its first word; undefined for "none ...". */
function documentedDefault(cell: string): string | undefined {
  const code = /`([^`]*)`/.exec(cell);
  const value = code ? code[1]! : cell.split(/\s/)[0]!;
  return /^none\b/.test(value) || value === '' ? undefined : value;
}

/** The rows of every table with a `default` column that name variables: the cells, and that column. */
function defaultColumns(text: string): { cells: string[]; at: number }[] {
  const out: { cells: string[]; at: number }[] = [];
  let at = -1;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      at = -1;
      continue;
    }
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    const header = cells.findIndex((c) => /^default$/i.test(c));
    if (header !== -1) at = header;
    else if (at !== -1 && /^`(TOOLPROOF|OTEL)_/.test(cells[0] ?? '')) out.push({ cells, at });
  }
  return out;
}

describe('docs: defaults', () => {
  const configuration = read('docs/configuration.md');

  it("every per-model setting is a row of docs/configuration.md's table with the default it has, and every row a setting", () => {
    const rows = tableAfter(configuration, 'Per-model settings');
    const table = new Map(rows.map((r) => [r[0]!.replace(/`/g, ''), r[1]!]));
    const defaults = new Map<string, unknown>();
    for (const [key, value] of Object.entries(DEFAULT_MODEL_SETTINGS)) {
      if (value && typeof value === 'object')
        for (const [k, v] of Object.entries(value)) defaults.set(`${key}.${k}`, v);
      else defaults.set(key, value);
    }
    const problems: string[] = [];
    for (const [key, value] of defaults) {
      const cell = table.get(key);
      if (cell === undefined) problems.push(`${key}: no row`);
      else if (/^`/.test(cell) && documentedDefault(cell) !== String(value))
        problems.push(`${key}: documented ${cell}, default ${String(value)}`);
    }
    for (const key of table.keys()) if (!defaults.has(key)) problems.push(`${key}: a row, no such setting`);
    expect(problems).toEqual([]);
  });

  it("every variable of the docs' tables with a default, set to that default, changes nothing", () => {
    const base = loadConfig({});
    const problems: string[] = [];
    let checked = 0;
    for (const [file, text] of docText) {
      for (const { cells, at } of defaultColumns(text)) {
        const vars = [...matches(cells[0]!, /`((?:TOOLPROOF|OTEL)_[A-Z0-9_]+)`/g)];
        const values = cells[at]!.split(' / ');
        vars.forEach((name, i) => {
          const cell = values[vars.length === values.length ? i : 0]!;
          // a `value` or a number; prose ("built-in simulator", "none", "off") sets nothing
          const value = /^`/.test(cell) || /^\d/.test(cell) ? documentedDefault(cell) : undefined;
          if (value === undefined) return;
          checked++;
          let config: unknown;
          try {
            config = loadConfig({ [name]: value });
          } catch (e) {
            problems.push(`${file}: ${name}=${value}: ${(e as Error).message}`);
            return;
          }
          if (!isDeepStrictEqual(config, base)) problems.push(`${file}: ${name}=${value} is not the default`);
        });
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  });
});

// ---- config-file keys -----------------------------------------------------------------------

type Schema = {
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
};

/** Every key name the YAML schema accepts, anywhere in it. */
function schemaKeys(schema: Schema, out = new Set<string>()): Set<string> {
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    out.add(key);
    schemaKeys(sub, out);
  }
  if (typeof schema.additionalProperties === 'object') schemaKeys(schema.additionalProperties, out);
  if (schema.items) schemaKeys(schema.items, out);
  return out;
}

/** The ```yaml blocks of a doc. */
function yamlBlocks(text: string): string[] {
  return [...text.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
}

describe('docs: config-file keys', () => {
  const topLevel = new Set(Object.keys(fileSchema.properties));

  /** TOOLPROOF_STREAM_KEEPALIVE_MS -> streamkeepalivems: the `server:` keys' twins, compared without case. */
  const envTwins = new Set(
    [...matches(allDocs, ENV_NAME)].map((n) =>
      n
        .replace(/^TOOLPROOF_/, '')
        .replaceAll('_', '')
        .toLowerCase(),
    ),
  );

  it('every `server:` key is a documented variable\'s twin, as docs/configuration.md says ("same keys as the env variables, camelCase")', () => {
    expect(read('docs/configuration.md')).toContain('same keys as the env variables, camelCase');
    const serverKeys = Object.keys(fileSchema.properties.server.properties);
    expect(serverKeys.filter((k) => !envTwins.has(k.toLowerCase()))).toEqual([]);
  });

  it('every other key the YAML file accepts is documented by its name', () => {
    const serverKeys = new Set(Object.keys(fileSchema.properties.server.properties));
    const keys = [...schemaKeys(fileSchema as unknown as Schema)].filter((k) => !serverKeys.has(k));
    expect(keys.length).toBeGreaterThan(40);
    expect(keys.filter((k) => !new RegExp(`\\b${k}\\b`).test(allDocs))).toEqual([]);
  });

  it("every toolproof config block in the docs passes the config's schema (no unknown or misspelt key)", () => {
    const validate = fileValidator();
    const problems: string[] = [];
    let checked = 0;
    for (const [file, text] of docText) {
      for (const block of yamlBlocks(text)) {
        let doc: unknown;
        try {
          doc = parseYaml(block);
        } catch {
          continue; // a template with placeholders, not a config
        }
        if (!doc || typeof doc !== 'object' || Array.isArray(doc)) continue;
        const keys = Object.keys(doc);
        // A toolproof config: its top-level keys are the file's (not a compose file, a manifest).
        if (!keys.every((k) => topLevel.has(k))) continue;
        checked++;
        if (!validate(doc))
          for (const e of validate.errors ?? [])
            problems.push(
              `${file}: ${e.instancePath || '(root)'} ${e.message}${e.keyword === 'additionalProperties' ? ` "${(e.params as { additionalProperty: string }).additionalProperty}"` : ''}`,
            );
      }
    }
    expect(checked).toBeGreaterThan(2);
    expect(problems).toEqual([]);
  });
});

// ---- routes ---------------------------------------------------------------------------------

describe('docs: routes', () => {
  it('every route toolproof serves is documented (a catch-all by the path it sits under, a parameter in any spelling)', () => {
    expect(app.paths).toContain('/v1/chat/completions');
    const problems: string[] = [];
    for (const path of app.paths) {
      const shown = path.replace(/\/\{\*\}$/, '');
      const re = new RegExp(
        `${shown.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]*\\?\}/g, '(?:\\{[a-z_]+\\}|:[a-z_]+)')}(?![\\w/])`,
      );
      if (!re.test(allDocs)) problems.push(path);
    }
    expect(problems).toEqual([]);
  });

  it("every route toolproof serves is a row of docs/api.md's endpoint table, whose last row sends anything else upstream", () => {
    const text = read('docs/api.md');
    const start = text.indexOf('\n## Endpoints\n');
    expect(start).toBeGreaterThan(-1);
    const lines = text.slice(start).split('\n');
    const first = lines.findIndex((line) => line.startsWith('|'));
    const end = lines.findIndex((line, i) => i > first && !line.startsWith('|'));
    const table = lines.slice(first, end).join('\n');
    expect(table).toContain('| anything else |');
    // A row may name a family as `PREFIX/*` (`/v1/audio/*`, `/inspect/api/*`): it covers what is under it.
    const families = [...matches(table, /`(?:[A-Z]+ )?(\/[\w/-]*)\/\*`/g)];
    const problems: string[] = [];
    for (const path of app.paths) {
      const shown = path.replace(/\/\{\*\}$/, '');
      const re = new RegExp(
        `${shown.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]*\\?\}/g, '(?:\\{[a-z_]+\\}|:[a-z_]+)')}(?![\\w/])`,
      );
      if (!re.test(table) && !families.some((f) => shown.startsWith(`${f}/`))) problems.push(path);
    }
    expect(problems).toEqual([]);
  });

  it('every inspector API path a doc names is a route', () => {
    const routes = app.paths.map((p) => new RegExp(`^${p.replace(/\{[^}]*\}/g, '[^/]+')}$`));
    const problems: string[] = [];
    for (const [file, text] of docText)
      for (const p of matches(text, /(\/inspect\/api\/[A-Za-z0-9/:{}_-]*[A-Za-z0-9}])/g))
        if (!routes.some((r) => r.test(p))) problems.push(`${file}: ${p}`);
    expect(problems).toEqual([]);
  });
});

// ---- the agent suite's install -------------------------------------------------------------

describe('docs: the agent suite', () => {
  it('docs/agents-setup.md counts the packages scripts/install-agents.mjs pins and those it lets run a postinstall script', async () => {
    // Imported by URL: a plain script, not part of the typed tree.
    const { AGENTS } = (await import(pathToFileURL(join(ROOT, 'scripts', 'install-agents.mjs')).href)) as {
      AGENTS: Array<{ pkg: string; script: boolean }>;
    };
    expect(AGENTS.length).toBeGreaterThan(5);
    const text = read('docs/agents-setup.md').replace(/\s+/g, ' ');
    expect(Number(/installs the (\d+) pinned packages/.exec(text)?.[1])).toBe(AGENTS.length);
    expect(Number(/allows exactly those (\d+), by name/.exec(text)?.[1])).toBe(
      AGENTS.filter((a) => a.script).length,
    );
  });
});

// ---- error codes ----------------------------------------------------------------------------

describe('docs: error codes', () => {
  it('every code of the error catalogue is documented, and every TP_ERR_* a doc names is in it', () => {
    const catalogue = new Set(Object.keys(ERROR_CATALOGUE));
    expect(catalogue.size).toBeGreaterThan(10);
    const named = matches(allDocs, /\b(TP_ERR_[A-Z0-9_]*[A-Z0-9])\b/g);
    const problems = [
      ...[...catalogue].filter((c) => !named.has(c)).map((c) => `${c}: in no doc`),
      ...[...named]
        .filter((c) => !catalogue.has(c))
        .map((c) => `${c}: named in a doc, not in protocol/errors.ts`),
    ];
    expect(problems).toEqual([]);
  });
});

// ---- links ----------------------------------------------------------------------------------

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a markdown file's headings make (a repeated heading gets -1, -2, ...). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of withoutCode(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/** The text with fenced blocks and inline code blanked (their brackets are not links). */
function withoutCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');
}

describe('docs: links', () => {
  it('every relative link of the user docs points at a file that exists, and its anchor at a heading', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const [file, text] of docText) {
      const links = [
        ...withoutCode(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g),
        ...withoutCode(text).matchAll(/^\[[^\]]+\]:\s+(\S+)/gm),
      ].map((m) => m[1]!);
      for (const link of links) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
        checked++;
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURI(path));
        if (!existsSync(target)) {
          problems.push(`${file}: ${link} (no ${relative(ROOT, target)})`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(anchor))
          problems.push(`${file}: ${link} (no heading #${anchor} in ${relative(ROOT, target)})`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(problems).toEqual([]);
  });

  it("the anchor rule is GitHub's (checked on headings the docs use)", () => {
    expect(slug('Admission and priority')).toBe('admission-and-priority');
    expect(slug('`final_answer` and `tool_choice: "none"`')).toBe('final_answer-and-tool_choice-none');
    expect(slug('Fast set and full set (issue 31)')).toBe('fast-set-and-full-set-issue-31');
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n')]).toEqual(['a', 'a-1']);
  });
});
