import type { Forge } from '../src/ports/forge.js';

/** Reports nothing: a bench measures the loop, its queue, the jail and git, not a forge. */
export class QuietForge implements Forge {
  async update(): Promise<void> {
    // not measured: nothing to report
  }
  async checkpointed(): Promise<void> {
    // not measured: nothing to report
  }
  async requestApproval(): Promise<void> {
    // not measured: nothing to report
  }
  async escalate(): Promise<void> {
    // not measured: nothing to report
  }
  async finished(): Promise<void> {
    // not measured: nothing to report
  }
}
