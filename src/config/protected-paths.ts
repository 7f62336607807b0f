import picomatch from 'picomatch';

/** CI workflows run with the repository's secrets; the repo config is the owner's word. */
export const DEFAULT_PROTECTED_PATHS = ['.github/workflows/**', '.github/goal-loop.yml'];

/** The changed paths that match any protected glob. */
export function protectedMatches(paths: readonly string[], globs: readonly string[]): string[] {
  if (globs.length === 0) return [];
  const isMatch = picomatch([...globs], { dot: true });
  return paths.filter((p) => isMatch(p));
}
