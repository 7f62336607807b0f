/** Bad flags or arguments: exit 1 with the message and a hint, never a stack trace. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Input that is wrong though the command line is well formed: exit 1 with the message alone. */
export class InputError extends Error {
  override name = 'InputError';
}
