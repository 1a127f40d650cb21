/**
 * The query strings the CLI sends over the API (RemoteApi). The whole numbers in them are checked
 * here first, as the coordinator checks them on the database, and sent as the numbers they are:
 * the API takes plain digits alone (`limit=05` is 400, http/kit.ts), while `baton audit --limit 05`
 * runs in both modes, as every flag's number does (docs/decisions/0055).
 */
import { parseAuditFollow, type AuditFollowInput } from '../coordinator/audit-follow.js';
import {
  parseAudit,
  parseJobList,
  parsePage,
  parseTaskList,
  type AuditInput,
  type JobListInput,
  type TaskListInput,
} from '../coordinator/inputs.js';

/** A query string of the fields given, each as text. */
export function query(fields: Readonly<Record<string, unknown>>): string {
  const given = Object.entries(fields).filter(([, value]) => value !== undefined && value !== null);
  return given.length === 0
    ? ''
    : `?${new URLSearchParams(given.map(([name, value]): [string, string] => [name, String(value)])).toString()}`;
}

/** GET /v1/tasks: the filters as given, the limit checked. */
export const taskListQuery = (input: TaskListInput): string =>
  query({ ...input, limit: parseTaskList(input).limit });

/** GET /v1/jobs, each job with its progress. */
export function jobListQuery(input: JobListInput): string {
  const { limit, before } = parseJobList(input);
  return query({ ...input, limit, before, progress: 'true' });
}

/** GET /v1/audit. */
export function auditQuery(input: AuditInput): string {
  const { session, jobId: job, afterId: after, limit } = parseAudit(input);
  return query({ ...input, session, job, after, limit });
}

/** GET /v1/audit/follow: the wait as a duration in ms (checked here, so bad input gets one line). */
export function followQuery(input: AuditFollowInput): string {
  const { filters, after, waitMs } = parseAuditFollow(input);
  const { session, jobId: job } = filters;
  return query({ key: input.key, session, job, type: input.type, after, wait: `${waitMs}ms` });
}

/** A page read by row id (a task's effects, escalations): after a row id, at most limit. */
export function pageQuery(input: { readonly after?: unknown; readonly limit?: unknown }): string {
  const { afterId: after, limit } = parsePage(input);
  return query({ after, limit });
}
