/** Polls until `check` holds (calling `meanwhile` between looks); fails after 30 s, naming what never happened. */
export async function until(check: () => boolean, what: string, meanwhile?: () => void): Promise<void> {
  for (const end = Date.now() + 30_000; !check(); ) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    meanwhile?.();
    await new Promise((r) => setTimeout(r, 20));
  }
}
