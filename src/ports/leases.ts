/** Named leases with a time to live, shared by the processes that use one store (one worker per goal). */
export interface Leases {
  /**
   * Takes the named lease for `holder` when it is free, expired, or already held by `holder`
   * (which renews it). Atomic across processes sharing the store. True when `holder` now holds it.
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Extends a lease `holder` still holds (the heartbeat); false when it was lost or taken over. */
  renewLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if `holder` holds it; otherwise does nothing. */
  releaseLease(name: string, holder: string): Promise<void>;
  /** Every lease row, live or expired, ordered by name. */
  listLeases(): Promise<LeaseRecord[]>;
}

export interface LeaseRecord {
  name: string;
  holder: string;
  acquiredAt: string;
  heartbeatAt: string;
  expiresAt: string;
  /** False once `expiresAt` has passed (by the store's clock). */
  live: boolean;
}
