/** Sends of one create at most, the first included: as Octokit's retry plugin would (1 + 3 retries). */
export const CREATE_TRIES = 4;

export interface CreateOnce<T> {
  /** The object, if GitHub has it already (by marker and author, head commit and name, head branch). */
  find: (() => Promise<T | undefined>) | undefined;
  /** Sends the create, with Octokit's retries off (write-options.ts createOptions). */
  create: () => Promise<T>;
  /** Look before the first send too: an earlier try may have created it, then died. */
  lookFirst?: boolean;
}

/**
 * Creates a GitHub object at most once. GitHub may perform a create and still answer 5xx (or the
 * answer may be lost): so the POST is never re-sent blindly; after any failure the object is
 * looked for, and only when it is not there is the create sent again. Without a way to find it,
 * a failed create is not sent again here (the caller's own retry decides).
 */
export async function createOnce<T>({ find, create, lookFirst = false }: CreateOnce<T>): Promise<T> {
  if (lookFirst && find) {
    const found = await find();
    if (found !== undefined) return found;
  }
  for (let tries = 1; ; tries++) {
    try {
      return await create();
    } catch (err) {
      if (!find) throw err;
      // A failed look (GitHub still down) throws: the create is not risked again now.
      const found = await find();
      if (found !== undefined) return found;
      if (tries >= CREATE_TRIES || !mayResend(err)) throw err;
    }
  }
}

/** A server error or no answer at all: the create may go again (a 4xx would be refused again). */
function mayResend(err: unknown): boolean {
  const status = (err as { status?: unknown }).status;
  return typeof status !== 'number' || status >= 500;
}
