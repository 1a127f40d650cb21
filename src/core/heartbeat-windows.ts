/**
 * The windows a runner and its agents heartbeat within, from the two settings an operator gives
 * (`--heartbeat-interval`, `--stale-after`) and nothing else: the dispatcher's lease TTL plays no
 * part, because leases and sessions are different things (issue 14, item 5: deriving the stale
 * threshold from a short TTL left agents a trust window shorter than their real cadence, and
 * healthy agents were killed as fenced).
 *
 *   |<- cadence: interval + one sample ->|<- latency: interval/2 ->|     |<- safety: 2 intervals ->|
 *   last good beat ─────────────────────────────────────────────── trust ends ────────────── stale
 *
 * - cadence: an agent beats on the first memory sample at least an interval after its last beat,
 *   so two beats are up to an interval plus one sample apart (the runner's own beats, less);
 * - latency margin: half an interval more for the store calls of one beat to return;
 * - trust: how long a runner or agent acts without a good beat, stale-after minus two intervals,
 *   so it is killed (the watchdog checks every sample) before recovery can hand its task away;
 * - a setting whose trust window does not cover cadence plus latency is refused.
 */
import { InvalidInputError } from './errors.js';

/** How often a run samples its scope's memory (and looks at its heartbeat): the most. */
const SAMPLE_INTERVAL_MS_MAX = 250;

export interface HeartbeatWindows {
  readonly heartbeatIntervalMs: number;
  readonly staleAfterMs: number;
  /** Between two of an agent's memory samples. */
  readonly sampleIntervalMs: number;
  /** The longest gap between two beats' starts when store calls are instant. */
  readonly cadenceMs: number;
  /** Without a good beat for this long, agents are killed as fenced. */
  readonly trustMs: number;
  /** The least stale threshold this heartbeat interval allows. */
  readonly staleAfterMinMs: number;
}

export function heartbeatWindows(heartbeatIntervalMs: number, staleAfterMs: number): HeartbeatWindows {
  const sampleIntervalMs = Math.min(SAMPLE_INTERVAL_MS_MAX, heartbeatIntervalMs);
  const cadenceMs = heartbeatIntervalMs + sampleIntervalMs;
  const latencyMarginMs = Math.ceil(heartbeatIntervalMs / 2);
  const safetyMarginMs = 2 * heartbeatIntervalMs;
  return {
    heartbeatIntervalMs,
    staleAfterMs,
    sampleIntervalMs,
    cadenceMs,
    trustMs: staleAfterMs - safetyMarginMs,
    staleAfterMinMs: cadenceMs + latencyMarginMs + safetyMarginMs,
  };
}

/** The windows, or InvalidInputError when the heartbeat interval is not well under the stale threshold. */
export function validateHeartbeatWindows(
  heartbeatIntervalMs: number,
  staleAfterMs: number,
): HeartbeatWindows {
  const windows = heartbeatWindows(heartbeatIntervalMs, staleAfterMs);
  if (staleAfterMs < windows.staleAfterMinMs) {
    const seconds = (ms: number): string => `${ms / 1000} s`;
    throw new InvalidInputError(
      `--stale-after ${seconds(staleAfterMs)} is too close to --heartbeat-interval ${seconds(heartbeatIntervalMs)}: ` +
        `agents would be killed as fenced between healthy heartbeats`,
      `give --stale-after at least ${seconds(windows.staleAfterMinMs)} (3.5 heartbeat intervals and one ` +
        `${seconds(windows.sampleIntervalMs)} sample), or a shorter --heartbeat-interval`,
    );
  }
  return windows;
}

/** The stale threshold when none is given: 10 s, or the least the heartbeat interval allows. */
export function defaultStaleAfterMs(heartbeatIntervalMs: number, preferredMs: number): number {
  return Math.max(
    preferredMs,
    Math.ceil(heartbeatWindows(heartbeatIntervalMs, 0).staleAfterMinMs / 1000) * 1000,
  );
}
