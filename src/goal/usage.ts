/** Model tokens spent, by kind. */
export interface Usage {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}
