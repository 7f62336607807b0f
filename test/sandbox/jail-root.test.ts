import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// The jail's root is a tmpfs bwrap makes. In `direct` mode its owner is the jail uid and it has no
// size: without a read-only remount a command could fill half the host's memory there, or plant
// /etc/ld.so.preload for every program the jail runs after it.
// The last mount on / is the one the command sees.
const PROBE = [
  `awk '$5 == "/" { o = $6 } END { print o }' /proc/self/mountinfo | tr , '\\n' | grep -qx ro && echo ROOT-RO`,
  'echo x > /x 2>/dev/null && echo WROTE-ROOT',
  'mkdir /var 2>/dev/null && echo MADE-VAR',
  'echo hi > /etc/ld.so.preload 2>/dev/null && echo WROTE-PRELOAD',
  'echo ok > in-workspace && echo WS-OK',
  'echo ok > /tmp/t && echo TMP-OK',
  'echo ok > "$HOME/h" && echo HOME-OK',
  'python3 -c "import os; os.openpty(); print(\'PTY-OK\')"',
].join('; ');

describe("the jail's root filesystem is read-only", () => {
  for (const jailMode of ['nested', 'direct'] as const) {
    it(`attack (${jailMode}): writing /x, /var or /etc/ld.so.preload fails; the workspace, /tmp and the home stay writable`, async () => {
      const { root, ws } = await jailRoot();
      chmodSync(root, 0o755); // direct: the jail uid must reach the workspace
      const result = await runIn(jail({ jailMode }), ws, PROBE);
      expect(result.output).toContain('ROOT-RO');
      expect(result.output).not.toContain('WROTE-ROOT');
      expect(result.output).not.toContain('MADE-VAR');
      expect(result.output).not.toContain('WROTE-PRELOAD');
      for (const ok of ['WS-OK', 'TMP-OK', 'HOME-OK', 'PTY-OK']) expect(result.output, result.output).toContain(ok);
      expect(existsSync(join(ws, 'in-workspace'))).toBe(true);
    });
  }
});
