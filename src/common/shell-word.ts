/** `word` as one word for a POSIX shell: as it is when that is safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._/@:+=,%-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
