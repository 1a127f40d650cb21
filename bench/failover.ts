/**
 * Failover: the time from SIGKILL of the leading `baton up` to the standby's first dispatch, at
 * the default lease TTL. NOT MEASURED YET: it needs `baton up` (issue 3), which is being built.
 * Until then this returns null and the JSON carries `failoverMs: null` and `ttlMs: null`.
 */
export interface FailoverResult {
  /** Median of the repetitions: SIGKILL of the leader → first dispatch by the standby. */
  readonly failoverMs: number;
  /** The lease TTL the cluster ran with (the default). */
  readonly ttlMs: number;
  /** The retry interval of a standby, for the target TTL + one retry interval. */
  readonly retryMs: number;
  readonly runs: readonly number[];
}

// TODO(issue 3): start two `baton up` on one database, wait for the leader, enqueue work,
// SIGKILL the leader, and time the standby's first dispatch (an audit row under the new term).
export function measureFailover(): Promise<FailoverResult | null> {
  return Promise.resolve(null);
}
