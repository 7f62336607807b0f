/** Lower-case words joined by dashes, at most `max` characters: `Fix Login Bug!` -> `fix-login-bug`. */
export function slugify(text: string, max: number): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/, '');
}
