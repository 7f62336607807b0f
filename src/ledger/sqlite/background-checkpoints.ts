import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** SQLite's own default: a commit that leaves the WAL past this many pages checkpoints it. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/**
 * The thread's threshold (16 MB of 4 KB pages). Each time the WAL is wholly backfilled, the next
 * commit starts it over and syncs its header, on the committing thread: the one sync the thread
 * cannot take. Backfilled every 500 ms, the webhook benchmark's WAL started over 10 times a run;
 * past 1,000 frames, 5; past 4,000, 2.
 */
const DEFAULT_MIN_FRAMES = 4000;
/**
 * A WAL this many times the thread's threshold has not started over: the writes never paused long
 * enough for a checkpoint on the thread to find no frame beyond it. The committing connection then
 * backfills after its commit, as SQLite does by default (it writes no frame meanwhile), so the WAL
 * starts over at the next commit and never grows without end.
 */
const BACKSTOP_FACTOR = 4;

// CommonJS, run with `eval`: no file to find next to the compiled module (vitest runs the sources).
const CHECKPOINTER = `
const { workerData, parentPort } = require('node:worker_threads');
const { closeSync, openSync, readSync } = require('node:fs');
const { endianness } = require('node:os');
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
// The wal-index (the -shm file, in native byte order): the first copy of its header holds mxFrame
// (the WAL's last valid frame) at byte 16; the checkpoint info after both copies, nBackfill (the
// frames already in the database file) at byte 96. Unreadable: as if the WAL were full.
const header = Buffer.alloc(100);
const read32 = endianness() === 'LE' ? (o) => header.readUInt32LE(o) : (o) => header.readUInt32BE(o);
const unbackfilled = () => {
  let fd;
  try {
    fd = openSync(workerData.path + '-shm', 'r');
    if (readSync(fd, header, 0, 100, 0) < 100) return Infinity;
    return read32(16) - read32(96);
  } catch {
    return Infinity;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
};
// Another connection's checkpoint under way is no error: the pragma reports it in its row, and
// the next tick backfills what is left.
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  if (unbackfilled() >= workerData.minFrames) checkpoint();
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'now') return parentPort.postMessage({ done: checkpoint()[0] });
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointTiming {
  /** How often the thread looks at the WAL. */
  intervalMs?: number;
  /** WAL frames not yet in the database file from which a look checkpoints (4,000 by default; the committing connection backfills at 4 times this). */
  minFrames?: number;
}

/** A connection whose WAL checkpoints run on another thread. */
export interface BackgroundCheckpoints {
  /** One checkpoint now, on the checkpoint thread (tests; the timer does it otherwise). */
  now(): Promise<void>;
  /** Stops the thread and closes its connection; the caller's connection stays open. */
  stop(): Promise<void>;
}

/**
 * Moves `db`'s WAL checkpoints off the calling thread. A checkpoint syncs the WAL and the
 * database file, and on a disk busy writing back other work (a clone, an `npm ci`) one sync took
 * 50-230 ms here: long enough to stall every webhook acknowledgement on the event loop behind it.
 * The caller's commits then only append to the WAL (with `synchronous = NORMAL`, no sync), and a
 * thread with a connection of its own looks every `intervalMs` and backfills it once `minFrames`
 * wait (as SQLite's autocheckpoint, by size). A PASSIVE checkpoint never waits on a writer. Under
 * writes that never pause, the caller's connection backfills what is left once the WAL is
 * BACKSTOP_FACTOR times that size; should the thread fail, it checkpoints on its own again at
 * SQLite's default size.
 */
export function checkpointInBackground(db: Database.Database, path: string, options: CheckpointTiming = {}): BackgroundCheckpoints {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const { intervalMs = 500, minFrames = DEFAULT_MIN_FRAMES } = options;
  const worker = new Worker(CHECKPOINTER, { eval: true, workerData: { module, path, intervalMs, minFrames } });
  worker.unref(); // a store left open must not hold the process open
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_FACTOR * minFrames}`);
  let stopping = false;
  let gone = false;
  const exited = new Promise<void>((resolve) => {
    const inline = () => {
      gone = true;
      if (db.open) db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
      resolve();
    };
    worker.once('exit', inline);
    worker.once('error', () => undefined); // the exit that follows restores inline checkpoints
  });
  return {
    now: () =>
      new Promise<void>((resolve, reject) => {
        const failed = () => reject(new Error('the checkpoint thread has stopped'));
        if (gone) return failed();
        worker.once('exit', failed);
        worker.once('message', () => {
          worker.off('exit', failed);
          resolve();
        });
        worker.postMessage('now');
      }),
    stop: async () => {
      if (!stopping) {
        stopping = true;
        // Held open until the thread is gone: else, with nothing else pending, the process would
        // end mid-close, before whatever follows the close (a CLI's exit code) ran.
        if (!gone) worker.ref();
        worker.postMessage('stop');
      }
      await exited;
    },
  };
}
