/** `{}` when the value is unset, else `make(value)`: spreads only the options that are set. */
export function pick<T, R extends object>(value: T | undefined, make: (v: T) => R): R | Record<string, never> {
  return value === undefined ? {} : make(value);
}
