/** Bad flags or arguments: exit 1 with the message and a hint, never a stack trace. */
export class UsageError extends Error {
  override name = 'UsageError';
}
