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

export function effectOf<E extends Encoding>(decode: RowDecoder<E>, row: EffectRow<E>): Effect {
  return {
    id: row.id,
    key: row.key,
    session: row.session_id,
    epoch: row.epoch,
    kind: row.kind,
    payload: decode.json(row.payload),
    recordedAt: decode.instant(row.recorded_at),
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

export function progressOf<E extends Encoding>(decode: RowDecoder<E>, row: ProgressRow<E>): Progress {
  return {
    session: row.session_id,
    outputBytes: row.output_bytes,
    filesChanged: row.files_changed,
    commits: row.commits,
    effects: row.effects,
    toolCalls: row.tool_calls,
    lastAt: instantOrNull(decode, row.last_at),
    note: row.note,
    stalledAt: instantOrNull(decode, row.stalled_at),
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
  draining: E['flag'];
  time_limit_ms: number | null;
  agent_command: E['flag'] | null;
  jobs_active: number;
  ram_promised_mb: number;
  ram_pending_mb: number;
}

export function hostWithLoadOf<E extends Encoding>(decode: RowDecoder<E>, row: HostRow<E>): Host {
  return {
    name: row.name,
    enabled: decode.flag(row.enabled),
    session: row.session_id,
    ramTotalMb: row.ram_total_mb,
    ramReservedMb: row.ram_reserved_mb,
    ramFreeMb: row.ram_free_mb,
    slotsMax: row.slots_max,
    heartbeatAt: decode.instant(row.heartbeat_at),
    registeredAt: decode.instant(row.registered_at),
    containment: row.containment,
    containmentRef: row.containment_ref,
    diskFreeMb: row.disk_free_mb,
    diskTotalMb: row.disk_total_mb,
    draining: decode.flag(row.draining),
    timeLimitMs: row.time_limit_ms,
    agentCommand: row.agent_command === null ? null : decode.flag(row.agent_command),
    jobsActive: row.jobs_active,
    ramPromisedMb: row.ram_promised_mb,
    ramPendingMb: row.ram_pending_mb,
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
  end_reason: string | null;
  ended_by: string | null;
  agent_pid: number | null;
  issues_worked: E['json'];
  jobs: number;
  attempts: number;
  held_ms: number;
  escalations: number;
}

export function sessionReportOf<E extends Encoding>(
  decode: RowDecoder<E>,
  row: SessionReportRow<E>,
): SessionReport {
  return {
    session: row.session,
    kind: row.kind as SessionReport['kind'],
    host: row.host,
    pid: row.pid,
    name: row.name,
    startedAt: decode.instant(row.started_at),
    endedAt: instantOrNull(decode, row.ended_at),
    end: row.end_state as SessionReport['end'],
    endReason: row.end_reason as SessionReport['endReason'],
    endedBy: row.ended_by,
    agentPid: row.agent_pid,
    issuesWorked: decode.json(row.issues_worked) as SessionReport['issuesWorked'],
    jobs: row.jobs,
    attempts: row.attempts,
    heldMs: row.held_ms,
    escalations: row.escalations,
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
  row: LiveClaimRow<E>,
  job: Job | null,
): LiveClaim {
  return {
    key: row.key,
    epoch: row.epoch,
    claimedAt: decode.instant(row.claimed_at),
    heartbeatAt: decode.instant(row.heartbeat_at),
    session: row.session_id,
    kind: row.kind as SessionKind,
    host: row.host,
    pid: row.pid,
    name: row.name,
    ttlMs: row.ttl_ms,
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
  actor: string | null;
  created_at: E['time'];
  attempts: number;
  last_error: string | null;
}

export function outboxRowOf<E extends Encoding>(decode: RowDecoder<E>, row: OutboxColumns<E>): OutboxRow {
  return {
    id: row.id,
    key: row.task_key,
    kind: row.kind,
    cause: row.cause,
    body: row.body,
    actor: row.actor,
    createdAt: decode.instant(row.created_at),
    attempts: row.attempts,
    lastError: row.last_error,
  };
}
