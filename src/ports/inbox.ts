/** The webhook inbox: each delivery stored once, so a redelivery is ignored and a crash resumes. */
export interface Inbox {
  /**
   * Remembers a webhook delivery and its parsed event (the inbox); false when the id was seen
   * before (a redelivery), in which case nothing is stored.
   */
  recordDelivery(id: string, event?: unknown): Promise<boolean>;
  /**
   * recordDelivery for each entry, in one transaction (one commit): all are stored, or none and
   * it throws. Each answer is recordDelivery's for that entry, in order.
   */
  recordDeliveries(entries: readonly { id: string; event?: unknown }[]): Promise<boolean[]>;
  /** Marks an inbox entry as handled, so a restart does not handle it again. */
  markDeliveryHandled(id: string): Promise<void>;
  /** Inbox entries with an event that are not handled yet, oldest first (resumed after a crash). */
  unhandledDeliveries(): Promise<InboxEntry[]>;
}

export interface InboxEntry {
  id: string;
  event: unknown;
  receivedAt: string;
}
