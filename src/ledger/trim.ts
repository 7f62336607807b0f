/** Keeps ledger rows small: the head and tail of long text (full logs live on disk). */
export function trimForLedger(text: string, max = 8000): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 40) / 2);
  return `${text.slice(0, half)}\n[… ${text.length - 2 * half} chars trimmed …]\n${text.slice(-half)}`;
}
