/**
 * Fenced side effects: a claim holder reports each write it makes to a per-task resource, with
 * the claim's (session, epoch). The store accepts it only while that pair is the task's live
 * claim and the session is live, judged in one atomic step with the append, and audits it
 * (`effect:recorded`). This is the resource checking the fencing token (Kleppmann 2016): once
 * epoch e+1 is granted, no effect carrying epoch e or below is ever accepted.
 */
import type { Effect, EffectResult } from '../core/effect.js';
import type { SessionId } from '../core/session.js';

export interface EffectRecordParams {
  readonly key: string;
  readonly session: SessionId;
  readonly epoch: number;
  readonly kind: string;
  /** A JSON value; `{}` when absent. */
  readonly payload?: unknown;
}

export interface EffectListParams {
  readonly key: string;
  /** Effects with id greater than this, oldest first. */
  readonly afterId?: number | undefined;
  readonly limit?: number | undefined;
}

export interface EffectsStore {
  readonly effects: {
    /**
     * Appends the effect if (session, epoch) is the task's live claim and the session is live;
     * `fenced` with the current holder otherwise (`sessionEnded` when the session is no longer
     * live), and nothing is written. NotFoundError for an
     * unknown task or session; InvalidInputError for a kind or payload no engine can store.
     */
    record(params: EffectRecordParams): Promise<EffectResult>;
    /** The task's accepted effects, oldest first; empty for an unknown task. */
    list(params: EffectListParams): Promise<readonly Effect[]>;
  };
}
