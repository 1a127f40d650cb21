/** Which engine a store is, and what it can do, for the callers that adapt to it (store.ts). */
export type Engine = 'sqlite' | 'postgres';

export interface StoreCapabilities {
  /** Whether other processes on other hosts can share this store. */
  readonly multiHost: boolean;
  /**
   * Whether calls sent together run side by side (PostgreSQL: each on a pooled connection of its
   * own), so a caller saves a round trip by sending a read before it knows it needs it; false where
   * they run one after another on one connection (SQLite), where such a read only costs.
   */
  readonly concurrentReads: boolean;
}
