/**
 * The rows of runs and the fleet that both engines read (effects, progress, hosts, session
 * reports, live claims), and the one mapping of each to the domain, decoded as rows.ts says.
 */
import type { ContainmentKind } from '../core/containment.js';
import type { Effect } from '../core/effect.js';
import type { Job } from '../core/job.js';
import type { Progress } from '../core/progress.js';
import type { SessionKind } from '../core/session.js';
import type { SessionReport } from '../core/session-report.js';
import type { Host } from './dispatch-store.js';
import type { OutboxRow } from './github-store.js';
import type { LiveClaim } from './observe-store.js';
import { instantOrNull, type Encoding, type RowDecoder } from './rows.js';

export interface EffectRow<E extends Encoding> {
  id: number;
  key: string;
  session_id: number;
  epoch: number;
  kind: string;
  payload: E['json'];
  recorded_at: E['time'];
}

export function effectOf<E extends Encoding>(decode: RowDecoder<E>, r: EffectRow<E>): Effect {
  return {
    id: r.id,
    key: r.key,
    session: r.session_id,
    epoch: r.epoch,
    kind: r.kind,
    payload: decode.json(r.payload),
    recordedAt: decode.instant(r.recorded_at),
  };
}

export interface ProgressRow<E extends Encoding> {
  session_id: number;
  output_bytes: number;
  files_changed: number;
  commits: number;
  effects: number;
  tool_calls: number;
  last_at: E['time'] | null;
  note: string | null;
  stalled_at: E['time'] | null;
}

export function progressOf<E extends Encoding>(decode: RowDecoder<E>, r: ProgressRow<E>): Progress {
  return {
    session: r.session_id,
    outputBytes: r.output_bytes,
    filesChanged: r.files_changed,
    commits: r.commits,
    effects: r.effects,
    toolCalls: r.tool_calls,
    lastAt: instantOrNull(decode, r.last_at),
    note: r.note,
    stalledAt: instantOrNull(decode, r.stalled_at),
  };
}

/** A host row with its load (jobs active, RAM promised and pending), as the host reads select it. */
export interface HostRow<E extends Encoding> {
  name: string;
  enabled: E['flag'];
  session_id: number | null;
  ram_total_mb: number;
  ram_reserved_mb: number;
  ram_free_mb: number;
  slots_max: number;
  heartbeat_at: E['time'];
  registered_at: E['time'];
  containment: ContainmentKind | null;
  containment_ref: string | null;
  disk_free_mb: number | null;
  disk_total_mb: number | null;
  jobs_active: number;
  ram_promised_mb: number;
  ram_pending_mb: number;
}

export function hostWithLoadOf<E extends Encoding>(decode: RowDecoder<E>, r: HostRow<E>): Host {
  return {
    name: r.name,
    enabled: decode.flag(r.enabled),
    session: r.session_id,
    ramTotalMb: r.ram_total_mb,
    ramReservedMb: r.ram_reserved_mb,
    ramFreeMb: r.ram_free_mb,
    slotsMax: r.slots_max,
    heartbeatAt: decode.instant(r.heartbeat_at),
    registeredAt: decode.instant(r.registered_at),
    containment: r.containment,
    containmentRef: r.containment_ref,
    diskFreeMb: r.disk_free_mb,
    diskTotalMb: r.disk_total_mb,
    jobsActive: r.jobs_active,
    ramPromisedMb: r.ram_promised_mb,
    ramPendingMb: r.ram_pending_mb,
  };
}

/** A row of the session_report view. */
export interface SessionReportRow<E extends Encoding> {
  session: number;
  kind: string;
  host: string;
  pid: number;
  name: string | null;
  started_at: E['time'];
  ended_at: E['time'] | null;
  end_state: string;
  issues_worked: E['json'];
  jobs: number;
  attempts: number;
  held_ms: number;
  escalations: number;
}

export function sessionReportOf<E extends Encoding>(
  decode: RowDecoder<E>,
  r: SessionReportRow<E>,
): SessionReport {
  return {
    session: r.session,
    kind: r.kind as SessionReport['kind'],
    host: r.host,
    pid: r.pid,
    name: r.name,
    startedAt: decode.instant(r.started_at),
    endedAt: instantOrNull(decode, r.ended_at),
    end: r.end_state as SessionReport['end'],
    issuesWorked: decode.json(r.issues_worked) as SessionReport['issuesWorked'],
    jobs: r.jobs,
    attempts: r.attempts,
    heldMs: r.held_ms,
    escalations: r.escalations,
  };
}

/** A live claim with its session, as observe's liveClaims selects it; the job is read beside it. */
export interface LiveClaimRow<E extends Encoding> {
  key: string;
  epoch: number;
  claimed_at: E['time'];
  heartbeat_at: E['time'];
  session_id: number;
  kind: string;
  host: string;
  pid: number;
  name: string | null;
  ttl_ms: number | null;
}

export function liveClaimOf<E extends Encoding>(
  decode: RowDecoder<E>,
  r: LiveClaimRow<E>,
  job: Job | null,
): LiveClaim {
  return {
    key: r.key,
    epoch: r.epoch,
    claimedAt: decode.instant(r.claimed_at),
    heartbeatAt: decode.instant(r.heartbeat_at),
    session: r.session_id,
    kind: r.kind as SessionKind,
    host: r.host,
    pid: r.pid,
    name: r.name,
    ttlMs: r.ttl_ms,
    job,
  };
}

/** A row of the GitHub outbox, as its pending read selects it. */
export interface OutboxColumns<E extends Encoding> {
  id: number;
  task_key: string;
  kind: 'labels' | 'comment';
  cause: string;
  body: string | null;
  created_at: E['time'];
  attempts: number;
  last_error: string | null;
}

export function outboxRowOf<E extends Encoding>(decode: RowDecoder<E>, r: OutboxColumns<E>): OutboxRow {
  return {
    id: r.id,
    key: r.task_key,
    kind: r.kind,
    cause: r.cause,
    body: r.body,
    createdAt: decode.instant(r.created_at),
    attempts: r.attempts,
    lastError: r.last_error,
  };
}
