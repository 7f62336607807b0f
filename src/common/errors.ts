/** Bad flags or arguments: exit 1 with the message and a hint, never a stack trace. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Input that is wrong though the command line is well formed: exit 1 with the message alone. */
export class InputError extends Error {
  override name = 'InputError';
}

/** What a caught value says: an Error's message, else the thrown value as `String()` writes it. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
