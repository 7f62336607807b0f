import picomatch from 'picomatch';

export const DEFAULT_PROTECTED_PATHS = ['.github/workflows/**'];

/** The changed paths that match any protected glob. */
export function protectedMatches(paths: readonly string[], globs: readonly string[]): string[] {
  if (globs.length === 0) return [];
  const isMatch = picomatch([...globs], { dot: true });
  return paths.filter((p) => isMatch(p));
}
