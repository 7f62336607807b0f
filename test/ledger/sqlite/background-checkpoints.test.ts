import { statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { checkpointInBackground } from '../../../src/ledger/sqlite/background-checkpoints.js';
import { openSqlite } from '../../../src/ledger/sqlite/database.js';
import { tempDir } from '../../helpers/temp.js';

const PAGE = 4096;
const open: Database.Database[] = [];

async function database(): Promise<{ db: Database.Database; path: string }> {
  const path = join(await tempDir('goal-checkpoints-'), 'ledger.db');
  const db = openSqlite(path);
  open.push(db);
  db.exec('CREATE TABLE filler (body BLOB)');
  return { db, path };
}

/** Commits `pages` pages of rows, one page a transaction (as the inbox commits deliveries): about 3 WAL frames each. */
function fill(db: Database.Database, pages: number): void {
  const insert = db.prepare('INSERT INTO filler (body) VALUES (?)');
  for (let i = 0; i < pages; i++) insert.run(Buffer.alloc(PAGE - 200, i % 251));
}

const fileSize = (path: string) => statSync(path).size;

afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});

describe('checkpoints in the background', () => {
  it('the connection that commits leaves the WAL to the checkpoint thread, which backfills it', async () => {
    const inline = await database();
    fill(inline.db, 1500);
    // SQLite's default: a commit past 1,000 WAL pages checkpoints, on the committing thread.
    expect(fileSize(inline.path)).toBeGreaterThan(1000 * PAGE);

    const { db, path } = await database();
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 60 * 60 * 1000 });
    fill(db, 1500);
    expect(fileSize(path)).toBeLessThan(100 * PAGE); // nothing backfilled on this thread
    expect(fileSize(`${path}-wal`)).toBeGreaterThan(1500 * PAGE);

    await checkpoints.now();
    expect(fileSize(path)).toBeGreaterThan(1500 * PAGE);
    await checkpoints.stop();
    expect(db.prepare('SELECT count(*) AS n FROM filler').get()).toEqual({ n: 1500 });
  });

  it('checkpoints on its timer once enough frames wait, and leaves a smaller WAL alone', async () => {
    const { db, path } = await database();
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 20, minFrames: 1000 });
    fill(db, 200); // a row's page, the table's root and the database header: 3 frames a commit
    await new Promise((r) => setTimeout(r, 200)); // ten looks, each at 600 frames waiting
    expect(fileSize(path)).toBeLessThan(100 * PAGE);
    fill(db, 200); // past 1,000 frames (the thread may backfill before this ends)
    await expect.poll(() => fileSize(path), { timeout: 10_000 }).toBeGreaterThan(300 * PAGE);
    await checkpoints.stop();
  });

  it('by default, waits for 4,000 frames: the WAL starts over (and syncs its header on the committing thread) that much less often', async () => {
    const { db, path } = await database();
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 20 });
    fill(db, 1200); // 3,600 frames
    await new Promise((r) => setTimeout(r, 200));
    expect(fileSize(path)).toBeLessThan(100 * PAGE);
    fill(db, 200); // past 4,000 frames: the thread may backfill before this ends, so not every row counts
    await expect.poll(() => fileSize(path), { timeout: 10_000 }).toBeGreaterThan(1200 * PAGE);
    await checkpoints.stop();
  });

  it('under writes that never pause, the WAL still starts over: the committing connection backfills once it is 4x the threshold', async () => {
    const { db, path } = await database();
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 1, minFrames: 100 });
    // One synchronous run of commits: the thread's checkpoints never find the WAL without new
    // frames, so without the committing connection's own backfill it would never start over.
    fill(db, 3000); // about 9,000 frames
    // 400 frames, plus the commits made while the thread held the checkpoint (without: all 9,000)
    expect(fileSize(`${path}-wal`)).toBeLessThan(4500 * (PAGE + 24));
    await checkpoints.stop();
    expect(db.prepare('SELECT count(*) AS n FROM filler').get()).toEqual({ n: 3000 });
  });

  it('checkpoints on its timer, and the WAL starts over instead of growing', async () => {
    const { db, path } = await database();
    // Both fills (1,800 frames each) stay under the committing connection's own backfill (4,000):
    // only the thread's checkpoint lets the WAL start over.
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 20, minFrames: 1000 });
    fill(db, 600);
    await expect.poll(() => fileSize(path), { timeout: 10_000 }).toBeGreaterThan(600 * PAGE);
    await new Promise((r) => setTimeout(r, 100)); // a tick with nothing to backfill
    fill(db, 600); // written from the WAL's start again, once it was backfilled
    expect(fileSize(`${path}-wal`)).toBeLessThan(2000 * (PAGE + 24)); // appended, it would hold 3,600 frames
    await checkpoints.stop();
  });

  it('two processes on one file (serve and a worker) each checkpoint in the background, and neither gives up when the other is checkpointing', async () => {
    const { db, path } = await database();
    const other = openSqlite(path);
    open.push(other);
    const threads = [checkpointInBackground(db, path, { intervalMs: 1, minFrames: 1 }), checkpointInBackground(other, path, { intervalMs: 1, minFrames: 1 })];
    for (let round = 0; round < 20; round++) {
      fill(db, 50);
      fill(other, 50);
      await Promise.all(threads.map((t) => t.now()));
    }
    for (const connection of [db, other]) expect(connection.pragma('wal_autocheckpoint', { simple: true })).toBe(4);
    await Promise.all(threads.map((t) => t.stop()));
    expect(db.prepare('SELECT count(*) AS n FROM filler').get()).toEqual({ n: 2000 });
  });

  it('when the thread stops or fails, the connection checkpoints on its own again', async () => {
    const { db, path } = await database();
    const checkpoints = checkpointInBackground(db, path, { intervalMs: 60 * 60 * 1000 });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(16_000);
    await checkpoints.stop();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await expect(checkpoints.now()).rejects.toThrow(/checkpoint thread has stopped/);

    // A thread that cannot open the file (here: it is gone) exits at once.
    const other = await database();
    const failing = checkpointInBackground(other.db, join(path, '..', 'missing.db'), { intervalMs: 60 * 60 * 1000 });
    await expect(failing.now()).rejects.toThrow(/checkpoint thread has stopped/);
    expect(other.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    fill(other.db, 1200);
    expect(fileSize(other.path)).toBeGreaterThan(1000 * PAGE);
  });
});
