import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

export type DeadlineResult = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Calls `exportName(...args)` from a built module (a path under the repository, e.g.
 * 'dist/src/x.js') in a worker thread, and kills the worker at the deadline: for attacks on
 * super-linear code, whose old version would otherwise hold the test process for hours.
 */
export function callWithDeadline(modulePath: string, exportName: string, args: unknown[], deadlineMs: number): Promise<DeadlineResult> {
  const module = pathToFileURL(fileURLToPath(new URL(`../../${modulePath}`, import.meta.url))).href;
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     import(workerData.module).then((m) => parentPort.postMessage(m[workerData.exportName](...workerData.args)));`,
    { eval: true, workerData: { module, exportName, args } },
  );
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve({ ok: false, reason: `still running after ${deadlineMs} ms` });
    }, deadlineMs);
    worker.once('message', (value: unknown) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve({ ok: true, value });
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      resolve({ ok: false, reason: String(err) });
    });
  });
}
