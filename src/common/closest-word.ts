/** Longer words are not compared: an unknown key that long is no typo, and the cost stays bounded. */
const MAX_WORD_CHARS = 64;

/**
 * The known word a typo most likely meant: the closest by edit distance (insert, delete, replace,
 * swap two neighbours; case ignored), if it is within a third of the word's length (at most 3).
 * `undefined` when none is that close. Ties go to the earlier candidate.
 */
export function closestWord(word: string, candidates: readonly string[]): string | undefined {
  if (word.length === 0 || word.length > MAX_WORD_CHARS) return undefined;
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    if (candidate === word || Math.abs(candidate.length - word.length) >= bestDistance) continue;
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** ` (did you mean x?)` for the closest known word, or nothing. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const match = closestWord(word, candidates);
  return match === undefined ? '' : ` (did you mean ${match}?)`;
}

/** Optimal string alignment distance: Levenshtein plus the swap of two adjacent characters. */
export function editDistance(a: string, b: string): number {
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}
