/** Deterministic token-like splitting, ids and counts. Pure except for the id generators. */
import { fnv1a } from '../protocol/hash.js';
import { randomBytes } from 'node:crypto';

const MAX_PIECE = 5;

/**
 * Splits text into small token-like pieces: a word with its leading space, up to 5 code points,
 * and single punctuation marks. Joining the pieces gives the text back exactly.
 */
export function splitTokens(text: string): string[] {
  const pieces: string[] = [];
  let current = '';
  let kind: 'word' | 'space' | 'none' = 'none';
  for (const ch of text) {
    const isWord = /[\p{L}\p{N}_]/u.test(ch);
    const isSpace = ch === ' ';
    if (isWord && (kind === 'word' || kind === 'space') && [...current].length < MAX_PIECE) {
      current += ch;
      kind = 'word';
      continue;
    }
    if (current) pieces.push(current);
    current = ch;
    kind = isWord ? 'word' : isSpace ? 'space' : 'none';
  }
  if (current) pieces.push(current);
  return pieces;
}

export function countTokens(text: string): number {
  return Math.max(0, Math.ceil(text.length / 4));
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomAlnum(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALNUM[b % ALNUM.length];
  return out;
}

export function randomHex(length: number): string {
  return randomBytes(Math.ceil(length / 2))
    .toString('hex')
    .slice(0, length);
}

/** FNV-1a, for deterministic choices keyed on text. */
export const hashString = (text: string): number => fnv1a(text);
