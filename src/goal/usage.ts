/** Model tokens spent, by kind. */
export interface Usage {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}

export const NO_USAGE: Readonly<Usage> = Object.freeze({ input: 0, output: 0, cache_read: 0, cache_write: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return { input: a.input + b.input, output: a.output + b.output, cache_read: a.cache_read + b.cache_read, cache_write: a.cache_write + b.cache_write };
}

/** Every token of a usage, whatever its kind. */
export function totalTokens(u: Usage): number {
  return u.input + u.output + u.cache_read + u.cache_write;
}

/** ` · N tokens · $x.xx` for an attempt that spent anything, else nothing. */
export function spendText(u: Usage, costUsd: number): string {
  const tokens = totalTokens(u);
  return tokens > 0 || costUsd > 0 ? ` · ${tokens.toLocaleString('en-US')} tokens · $${costUsd.toFixed(2)}` : '';
}
