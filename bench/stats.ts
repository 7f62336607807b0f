/** Small helpers shared by the benchmarks. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

export function ms(n: number): string {
  return `${n.toFixed(1)} ms`;
}

export interface Verdict {
  name: string;
  pass: boolean;
  detail: string;
}

export function printVerdicts(verdicts: Verdict[]): void {
  for (const v of verdicts) process.stdout.write(`  ${v.pass ? 'PASS' : 'FAIL'}  ${v.name}: ${v.detail}\n`);
}
