/**
 * A reference model of the store's claim, effect, session and queue rules, small enough to be
 * obviously right: plain maps, no clocks, no SQL. The property tests (test/property/) run random
 * command sequences against it and against each engine and compare every answer. Sessions and
 * jobs are named by their index in creation order, so the model never needs real ids.
 */
import type { JobState } from '../../core/job.js';

export type ModelOp =
  | { readonly t: 'session.start' }
  | { readonly t: 'session.end'; readonly s: number }
  | { readonly t: 'claim'; readonly s: number; readonly k: number }
  | {
      readonly t: 'release';
      readonly s: number;
      readonly k: number;
      readonly de: number;
      readonly outcome: 'done' | 'released';
    }
  | { readonly t: 'reopen'; readonly k: number }
  | { readonly t: 'effect'; readonly s: number; readonly k: number; readonly de: number }
  | { readonly t: 'heartbeat'; readonly s: number; readonly k: number | null; readonly de: number }
  | { readonly t: 'enqueue'; readonly k: number }
  | { readonly t: 'claimNext'; readonly s: number }
  | { readonly t: 'job.start'; readonly j: number; readonly s: number; readonly de: number }
  | {
      readonly t: 'job.finish';
      readonly j: number;
      readonly s: number;
      readonly de: number;
      readonly status: Finish;
    }
  | { readonly t: 'job.cancel'; readonly j: number };

export type Finish = 'done' | 'failed' | 'oom_killed' | 'cancelled';

/** An answer, normalised so the model and an engine can be compared with deepEqual. */
export type Answer = Readonly<Record<string, unknown>> | null;

interface TaskModel {
  epoch: number;
  holder: number | null;
  effects: number;
  /** The task lifecycle, as far as these ops reach: a job or claim ending done finishes it. */
  state: 'open' | 'done';
}

interface JobModel {
  readonly k: number;
  status: JobState;
  epoch: number;
  attempt: number;
  session: number | null;
}

const ACTIVE: readonly JobState[] = ['queued', 'claimed', 'running'];

export class StoreModel {
  readonly live: boolean[] = [];
  readonly tasks: TaskModel[];
  readonly jobs: JobModel[] = [];

  constructor(readonly taskCount: number) {
    this.tasks = Array.from({ length: taskCount }, () => ({
      epoch: 0,
      holder: null,
      effects: 0,
      state: 'open' as const,
    }));
  }

  /** The epoch an op presents: the task's current epoch shifted by `de`, never below 1. */
  epochFor(taskIndex: number, de: number): number {
    return Math.max(1, (this.tasks[taskIndex]?.epoch ?? 0) + de);
  }

  jobEpochFor(jobIndex: number, de: number): number {
    return Math.max(1, (this.jobs[jobIndex]?.epoch ?? 0) + de);
  }

  private holder(task: TaskModel): Answer {
    return task.holder === null ? null : { s: task.holder, epoch: task.epoch };
  }

  private task(taskIndex: number): TaskModel {
    const task = this.tasks[taskIndex];
    if (task === undefined) throw new Error(`model: no task ${taskIndex}`);
    return task;
  }

  /** The task is done: its active job, if any, ends with it. */
  private finish(taskIndex: number, jobEnd: JobState): void {
    this.task(taskIndex).state = 'done';
    for (const job of this.jobs) if (job.k === taskIndex && ACTIVE.includes(job.status)) job.status = jobEnd;
  }

  /** Applies an op whose indices are in range; returns the expected answer. */
  apply(op: ModelOp): Answer {
    switch (op.t) {
      case 'session.start':
        this.live.push(true);
        return { s: this.live.length - 1 };
      case 'session.end': {
        if (this.live[op.s] !== true) return { ended: false };
        this.live[op.s] = false;
        for (const task of this.tasks) if (task.holder === op.s) task.holder = null;
        return { ended: true };
      }
      case 'claim': {
        const task = this.task(op.k);
        if (this.live[op.s] !== true) return { error: 'fenced' };
        if (task.state !== 'open') return { error: `task_${task.state}` };
        if (task.holder === op.s) return { ok: true, epoch: task.epoch, granted: false };
        if (task.holder !== null) return { ok: false, holder: this.holder(task) };
        task.epoch++;
        task.holder = op.s;
        return { ok: true, epoch: task.epoch, granted: true };
      }
      case 'release':
      case 'effect': {
        const task = this.task(op.k);
        const epoch = this.epochFor(op.k, op.de);
        const liveEnough = op.t === 'release' || this.live[op.s] === true;
        if (!liveEnough || task.holder !== op.s || task.epoch !== epoch) {
          return { ok: false, current: this.holder(task) };
        }
        if (op.t === 'effect') task.effects++;
        else {
          task.holder = null;
          if (op.outcome === 'done' && task.state === 'open') this.finish(op.k, 'cancelled');
        }
        return { ok: true };
      }
      case 'reopen': {
        const task = this.task(op.k);
        if (task.state !== 'done') return { error: `task_${task.state}` };
        task.state = 'open';
        return { ok: true };
      }
      case 'heartbeat': {
        // An ended session is fenced, and still told who holds the task it named.
        if (this.live[op.s] !== true)
          return { ok: false, current: op.k === null ? null : this.holder(this.task(op.k)) };
        if (op.k === null) return { ok: true };
        const task = this.task(op.k);
        const epoch = this.epochFor(op.k, op.de);
        return task.holder === op.s && task.epoch === epoch
          ? { ok: true }
          : { ok: false, current: this.holder(task) };
      }
      case 'enqueue': {
        if (this.task(op.k).state !== 'open') return { error: `task_${this.task(op.k).state}` };
        const active = this.jobs.findIndex((job) => job.k === op.k && ACTIVE.includes(job.status));
        if (active >= 0) return { created: false, j: active };
        this.jobs.push({ k: op.k, status: 'queued', epoch: 0, attempt: 0, session: null });
        return { created: true, j: this.jobs.length - 1 };
      }
      case 'claimNext': {
        if (this.live[op.s] !== true) return { error: 'fenced' };
        const jobIndex = this.jobs.findIndex((candidate) => candidate.status === 'queued');
        const job = this.jobs[jobIndex];
        if (job === undefined) return null;
        Object.assign(job, {
          status: 'claimed',
          epoch: job.epoch + 1,
          attempt: job.attempt + 1,
          session: op.s,
        });
        return { j: jobIndex, epoch: job.epoch, attempt: job.attempt };
      }
      case 'job.start':
      case 'job.finish': {
        const job = this.jobs[op.j];
        if (job === undefined) throw new Error(`model: no job ${op.j}`);
        const epoch = this.jobEpochFor(op.j, op.de);
        const guard = job.session === op.s && job.epoch === epoch;
        const fromClaimed = op.t === 'job.start' || op.status === 'failed' || op.status === 'cancelled';
        const from: readonly JobState[] =
          op.t === 'job.start' ? ['claimed'] : fromClaimed ? ['claimed', 'running'] : ['running'];
        if (!guard || !from.includes(job.status)) return { ok: false, status: job.status };
        job.status = op.t === 'job.start' ? 'running' : op.status;
        if (job.status === 'done' && this.task(job.k).state === 'open') this.finish(job.k, 'cancelled');
        return { ok: true, status: job.status };
      }
      case 'job.cancel': {
        const job = this.jobs[op.j];
        if (job === undefined) throw new Error(`model: no job ${op.j}`);
        if (!ACTIVE.includes(job.status)) return { ok: false, status: job.status };
        job.status = 'cancelled';
        return { ok: true, status: job.status };
      }
    }
  }
}
