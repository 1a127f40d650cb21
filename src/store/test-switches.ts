/**
 * TEST-ONLY switches for the fault-injection suite (test/chaos/). Never set them in a real
 * deployment: they exist so the checkers can be shown to fail when the guarantee they check is
 * removed (the negative control), and so a write transaction can be held open to be killed.
 * Asking for any of them throws unless the environment says BATON_UNSAFE_TEST_SWITCHES=1.
 */
import { InvalidInputError } from '../core/errors.js';
import type { Store } from './store.js';

export const UNSAFE_ENV = 'BATON_UNSAFE_TEST_SWITCHES';

export interface OpenOptions {
  /**
   * TEST ONLY, the negative control: effects.record stops checking (session, epoch) and the
   * session's liveness, and sessions.heartbeat stops telling a holder it was fenced off.
   */
  readonly unsafeDisableFencing?: boolean | undefined;
  /**
   * TEST ONLY, SQLite: called inside effects.record's write transaction after the insert, so a
   * test can hold BEGIN IMMEDIATE open and kill the process inside it.
   */
  readonly unsafeInsideEffectWrite?: (() => void) | undefined;
}

/** What an engine needs to know; the defaults are the only values production ever sees. */
export interface TestSwitches {
  readonly fencing: boolean;
  readonly insideEffectWrite: (() => void) | null;
}

export const SAFE: TestSwitches = { fencing: true, insideEffectWrite: null };

export function testSwitches(options: OpenOptions): TestSwitches {
  const fencing = options.unsafeDisableFencing !== true;
  const insideEffectWrite = options.unsafeInsideEffectWrite ?? null;
  if (fencing && insideEffectWrite === null) return SAFE;
  if (process.env[UNSAFE_ENV] !== '1') {
    throw new InvalidInputError(
      'unsafe test switches were asked for outside a test',
      `they disable safety checks; only the fault-injection suite sets ${UNSAFE_ENV}=1`,
    );
  }
  return { fencing, insideEffectWrite };
}

/** With fencing off, a heartbeat naming a claim that is gone still answers ok. */
export function applySwitches(store: Store, switches: TestSwitches): Store {
  if (switches.fencing) return store;
  const heartbeat = store.sessions.heartbeat.bind(store.sessions);
  return {
    ...store,
    sessions: {
      ...store.sessions,
      heartbeat: async (p) => {
        await heartbeat(p);
        return { ok: true };
      },
    },
  };
}
