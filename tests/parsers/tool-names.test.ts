/** engine/tool-names.ts: which declared tool an undeclared call name means (the engine gates it on the schema). */
import { describe, expect, it } from 'vitest';
import { resolveToolName } from '../../parsers/engine/tool-names.js';
import { toolsOf } from './engine-helpers.js';

const tools = toolsOf({ name: 'read_file' }, { name: 'Search' }, { name: 'search' }, { name: 'getWeather' });

describe('resolveToolName', () => {
  it.each([
    ['functions.read_file', { name: 'read_file', repairs: ['name-prefix'] }],
    ['READ_FILE', { name: 'read_file', repairs: ['name-case'] }],
    ['functions.Read_File', { name: 'read_file', repairs: ['name-prefix', 'name-case'] }],
    ['GETWEATHER', { name: 'getWeather', repairs: ['name-case'] }],
    ['default_api.read_file', { name: 'read_file', repairs: ['name-prefix'] }],
    ['default_api.READ_FILE', { name: 'read_file', repairs: ['name-prefix', 'name-case'] }],
  ])('%s means one declared tool', (name, expected) => {
    expect(resolveToolName(name, tools)).toEqual(expected);
  });

  it.each([
    ['SEARCH', 'two declared names equal but for case'],
    ['functions.', 'the namespace alone'],
    ['default_api.', 'the namespace alone'],
    ['default_api.functions.read_file', 'two namespaces'],
    ['tools.read_file', 'another namespace'],
    ['get_weather', 'another spelling, not another case'],
    ['readfile', 'no declared name folds to it'],
  ])('%s means none (%s)', (name) => {
    expect(resolveToolName(name, tools)).toBeNull();
  });

  it('is never asked for a declared name, and would not rename one', () => {
    expect(resolveToolName('Search', tools)).toBeNull();
  });
});
