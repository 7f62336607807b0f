import { createHash } from 'node:crypto';

// TEMPORARY: replaced by h-lint's version at merge.
export function failureSignature(output: string, _opts: { workspaceDir?: string } = {}): string {
  return createHash('sha256')
    .update(output.replace(/\d+(\.\d+)?\s*m?s\b/g, ''))
    .digest('hex');
}
