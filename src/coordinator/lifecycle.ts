/**
 * Use cases of the task lifecycle (core/task.ts) for the adapters: a person's actions (reopen,
 * close, approve, reject, resolve), escalations, gates, `next`, a task's history and the store's
 * settings, among them the vague-issue rule's threshold. Raw input is checked here, then each
 * use case is one store step; who acted comes in as an Actor the adapter names (the CLI: the
 * operating-system user and host; HTTP: its token's name).
 */
import { checkedActor } from './actor-session.js';
import { finishedTaskMove } from '../core/audit-event.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import type { Claim } from '../core/claim.js';
import type { Session } from '../core/session.js';
import {
  APPROVAL_GATES,
  INSUFFICIENT_INFO,
  REASON_LENGTH_MAX,
  TASK_GATES,
  isVague,
  type Actor,
  type Task,
  type TaskEvent,
  type TaskState,
} from '../core/task.js';
import {
  validateEpoch,
  validateId,
  validateInteger,
  validateKey,
  validateName,
  validateOneOf,
  validateReason,
} from '../core/validate.js';
import type { Setting, TaskDependencies, TaskHandAction } from '../store/lifecycle-store.js';
import type { Store, TaskAddParams } from '../store/store.js';
import { LIST_LIMIT_MAX, parsePage, parseSessionStart, type SessionStartInput } from './inputs.js';

/** The settings the store keeps, each with its check. */
const SETTINGS = {
  /**
   * The vague-issue rule: a task added or imported whose title and body hold fewer words than
   * this goes to the escalation queue as `insufficient-info`. 0 (the default) turns it off.
   */
  'vague-words': (value: unknown) => String(validateInteger('vague-words', value, 0, 1000)),
  /**
   * on: the leading `baton up` queues a job for every open task nothing will work otherwise
   * (coordinator/auto-enqueue.ts): added, imported from GitHub, rejected in review, resolved.
   */
  'auto-enqueue': (value: unknown) => validateOneOf('auto-enqueue', value, ['on', 'off'] as const),
} as const satisfies Record<string, (value: unknown) => string>;
export type SettingName = keyof typeof SETTINGS;

/** The vague-issue rule applied to a task about to be added: escalated when it says too little. */
export async function triaged(store: Store, params: TaskAddParams): Promise<TaskAddParams> {
  const minWords = Number((await store.settings.get('vague-words')) ?? '0');
  return isVague(params.title ?? '', params.body ?? '', minWords)
    ? { ...params, escalation: INSUFFICIENT_INFO, byName: params.byName ?? 'the vague-issue rule' }
    : params;
}

export interface ActionInput {
  readonly key: unknown;
  /** Who acted, named by the adapter; with the session they acted under, if any. */
  readonly by: Actor;
  readonly reason?: unknown;
}

export interface ApproveInput extends ActionInput {
  readonly gate: unknown;
}

/** A dependency edge: `key` waits until `on` is done. */
export interface DependInput {
  readonly key: unknown;
  readonly on: unknown;
  readonly by: Actor;
}

export interface EscalateInput extends ActionInput {
  readonly session?: unknown;
  readonly epoch?: unknown;
}

export interface NextInput {
  /** The caller's session; left out, `next` starts one of `kind` (default human) for the caller. */
  readonly session?: unknown;
  readonly kind?: unknown;
  readonly ttl?: unknown;
  readonly host: unknown;
  readonly pid: unknown;
  readonly project?: unknown;
  readonly label?: unknown;
}

export type NextOutcome =
  | { readonly ok: true; readonly task: Task; readonly claim: Claim; readonly session: Session | null }
  | {
      readonly ok: false;
      /** Open tasks of the same filters that wait for a gate, which `next` skipped. */
      readonly gated: readonly Task[];
    };

/** At most this many known projects (or labels) are named when `next` is given an unknown one. */
const KNOWN_NAMED = 10;

const reasonOf = (what: string, value: unknown): string => validateReason(what, value, REASON_LENGTH_MAX);
const optionalReason = (what: string, value: unknown): string | null =>
  value === undefined ? null : reasonOf(what, value);

/** How to name the gate an approval opens (the CLI's --gate, the API's `gate` field). */
const APPROVE_GATE_HINT =
  'design opens the design gate of an open task, review approves a task in review ' +
  '(`baton approve K --gate design`; over HTTP {"gate": "design"})';

export class Lifecycle {
  constructor(private readonly store: Store) {}

  reopen(input: ActionInput): Promise<Task> {
    return this.act(input, 'reopen', reasonOf('reason', input.reason));
  }

  /** Closes the task as won't do, or with `done` marks it done (a person or an importer). */
  close(input: ActionInput & { readonly done?: boolean }): Promise<Task> {
    return this.act(
      input,
      input.done === true ? 'complete' : 'close',
      optionalReason('reason', input.reason),
    );
  }

  resolve(input: ActionInput): Promise<Task> {
    return this.act(input, 'resolve', optionalReason('note', input.reason));
  }

  reject(input: ActionInput): Promise<Task> {
    return this.act(input, 'reject', reasonOf('reason', input.reason));
  }

  /** Opens the design gate, or approves a task in review (to done). */
  async approve(input: ApproveInput): Promise<Task> {
    const gate = validateOneOf('gate', input.gate, APPROVAL_GATES, APPROVE_GATE_HINT);
    const note = optionalReason('note', input.reason);
    if (gate === 'review') return this.act(input, 'approve', note);
    const key = validateKey(input.key);
    const by = await checkedActor(this.store, input.by);
    return this.store.lifecycle.approveGate({ key, gate, by, note });
  }

  async gate(input: { readonly key: unknown; readonly gate: unknown; readonly by: Actor }): Promise<Task> {
    const gate = validateOneOf('gate', input.gate, TASK_GATES);
    const key = validateKey(input.key);
    return this.store.lifecycle.gate({ key, gate, by: await checkedActor(this.store, input.by) });
  }

  /** Makes the task wait until `on` is done (docs/decisions/0035-task-dependencies.md). */
  async depend(input: DependInput): Promise<TaskDependencies> {
    const [key, on] = [validateKey(input.key), dependencyKey(input.on)];
    return this.store.lifecycle.depend({ key, on, by: await checkedActor(this.store, input.by) });
  }

  async undepend(input: DependInput): Promise<TaskDependencies> {
    const [key, on] = [validateKey(input.key), dependencyKey(input.on)];
    return this.store.lifecycle.undepend({ key, on, by: await checkedActor(this.store, input.by) });
  }

  async escalate(input: EscalateInput) {
    if ((input.session === undefined) !== (input.epoch === undefined)) {
      throw new InvalidInputError(
        'an escalation under a claim needs both the session and the epoch',
        'give both --session and --epoch (an agent: $BATON_SESSION and $BATON_EPOCH), or neither',
      );
    }
    const claim =
      input.session === undefined
        ? undefined
        : { session: validateId('session', input.session), epoch: validateEpoch(input.epoch) };
    const by = claim === undefined ? input.by : { ...input.by, session: claim.session };
    const key = validateKey(input.key);
    return this.store.lifecycle.escalate({ key, reason: reasonOf('reason', input.reason), by, claim });
  }

  escalations(input: { readonly limit?: unknown } = {}): Promise<readonly Task[]> {
    return this.store.lifecycle.escalations({ limit: parsePage({ limit: input.limit }).limit });
  }

  /**
   * Claims the next eligible task for the caller (starting a session when none is given). When
   * none is eligible, says which tasks of the same filters wait for a gate, and ends the session
   * it started: a `baton next` that found nothing leaves no session live for its TTL (8 h for a
   * human), which the sessions list and the dashboard would show as someone at work.
   */
  async next(input: NextInput): Promise<NextOutcome> {
    const project = input.project === undefined ? undefined : validateName('project', input.project);
    const label = input.label === undefined ? undefined : validateName('label', input.label);
    if (input.session !== undefined && (input.kind !== undefined || input.ttl !== undefined)) {
      // Not silently dropped: a caller who asked for a kind or a TTL would claim under a session without them.
      throw new InvalidInputError(
        'a session was given, so kind and ttl (which describe the session `next` starts) have no use',
        'leave them out, or leave out the session to start a new one of that kind and ttl',
      );
    }
    // An unknown project is refused before the session this call would start is written; with
    // the caller's own session, only once nothing was eligible, so a claim pays nothing for it.
    if (input.session === undefined) await this.refuseUnknown(project, label);
    let session: Session | null = null;
    let id: number;
    if (input.session === undefined) {
      const start: SessionStartInput = {
        kind: input.kind ?? 'human',
        host: input.host,
        pid: input.pid,
        ttl: input.ttl,
      };
      session = await this.store.sessions.start(parseSessionStart(start));
      id = session.id;
    } else {
      id = validateId('session', input.session);
    }
    const got = await this.store.lifecycle.next({ session: id, project, label });
    if (got !== null) return { ok: true, task: got.task, claim: got.claim, session };
    if (session !== null) await this.store.sessions.end(session.id);
    else await this.refuseUnknown(project, label);
    const gated = await this.store.tasks.list({
      project,
      label,
      state: 'open',
      gated: true,
      limit: LIST_LIMIT_MAX,
    });
    return { ok: false, gated };
  }

  /**
   * Refuses a project or a label given that is a typo rather than a filter with nothing in it.
   * `next` and `task list` both ask it.
   */
  async refuseUnknown(project: string | undefined, label: string | undefined): Promise<void> {
    if (project !== undefined) await this.refuseUnknownProject(project);
    if (label !== undefined) await this.refuseUnknownLabel(label);
  }

  /**
   * Refuses a label that no task has, in any state (done and closed tasks too): labels live on
   * tasks alone, so a label is known while some task carries it. The hint names the known ones
   * when they are few.
   */
  private async refuseUnknownLabel(label: string): Promise<void> {
    if ((await this.store.tasks.list({ label, limit: 1 })).length > 0) return;
    const tasks = await this.store.tasks.list({ limit: LIST_LIMIT_MAX });
    const names = [...new Set(tasks.flatMap((task) => task.labels))].sort();
    let hint = 'no task has a label yet: give one with `baton task add <key> --label L`';
    if (names.length > 0) hint = "see each task's labels with `baton task list --json`";
    if (names.length > 0 && names.length <= KNOWN_NAMED && tasks.length < LIST_LIMIT_MAX) {
      hint = `known labels: ${names.join(', ')}`;
    }
    throw new NotFoundError('label', label, hint);
  }

  /**
   * Refuses a project that no task has ever had and `baton project add` never registered: a
   * typo, not an empty project. The hint names the known ones when they are few.
   */
  private async refuseUnknownProject(project: string): Promise<void> {
    if ((await this.store.tasks.list({ project, limit: 1 })).length > 0) return;
    if ((await this.store.projects.get(project)) !== null) return;
    const [registered, tasks] = await Promise.all([
      this.store.projects.list(),
      this.store.tasks.list({ limit: LIST_LIMIT_MAX }),
    ]);
    const names = [
      ...new Set([...registered.map((known) => known.name), ...tasks.flatMap((task) => task.project ?? [])]),
    ].sort();
    let hint = 'no task has a project yet: give one with `baton task add <key> --project P`';
    if (names.length > 0) hint = 'list them with `baton project list`, and tasks with `baton task list`';
    if (names.length > 0 && names.length <= KNOWN_NAMED && tasks.length < LIST_LIMIT_MAX) {
      hint = `known projects: ${names.join(', ')}`;
    }
    throw new NotFoundError('project', project, hint);
  }

  /**
   * The task's history of states, gates and dependencies, oldest first, from the ledger: its
   * `task:state`, `task:gated`, `task:approved`, `task:depended` and `task:undepended` rows, and
   * the `job:finished` rows of jobs whose end finished it (they record that move themselves,
   * decision 0023).
   */
  async history(key: unknown): Promise<readonly TaskEvent[]> {
    const checked = validateKey(key);
    if ((await this.store.tasks.get(checked)) === null) {
      throw new NotFoundError('task', checked, 'add it with `baton task add`');
    }
    const types = [
      'task:state',
      'task:gated',
      'task:approved',
      'task:depended',
      'task:undepended',
      'job:finished',
    ] as const;
    const rows = (await Promise.all(types.map((type) => this.store.audit.list({ key: checked, type }))))
      .flat()
      .sort((left, right) => left.id - right.id);
    return rows.flatMap((entry): TaskEvent[] => {
      const detail = entry.detail;
      const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
      if (entry.type === 'job:finished') {
        const move = finishedTaskMove(entry);
        if (move === null) return [];
        const by = `job ${entry.jobId ?? '?'}`;
        return [
          {
            at: entry.at,
            type: 'task:state',
            ...move,
            action: 'finish',
            gate: null,
            by,
            session: entry.session,
            reason: null,
            on: null,
          },
        ];
      }
      return [
        {
          at: entry.at,
          type: entry.type as TaskEvent['type'],
          from: text(detail['from']) as TaskState | null,
          to: text(detail['to']) as TaskState | null,
          action: text(detail['action']),
          gate: (text(detail['gate']) ??
            (detail['action'] === 'approve' ? 'review' : null)) as TaskEvent['gate'],
          by: text(detail['by']),
          session: entry.session,
          reason: text(detail['reason']) ?? text(detail['note']),
          on: text(detail['on']),
        },
      ];
    });
  }

  setSetting(input: {
    readonly name: unknown;
    readonly value: unknown;
    readonly by: Actor;
  }): Promise<Setting> {
    const name = validateOneOf('setting', input.name, Object.keys(SETTINGS) as SettingName[]);
    return this.store.settings.set({ name, value: SETTINGS[name](input.value), by: input.by });
  }

  settings(): Promise<readonly Setting[]> {
    return this.store.settings.list();
  }

  private async act(input: ActionInput, action: TaskHandAction, reason: string | null): Promise<Task> {
    const key = validateKey(input.key);
    return this.store.lifecycle.transition({
      key,
      action,
      by: await checkedActor(this.store, input.by),
      reason,
    });
  }
}

/** The task a dependency names: required, a key like any other. */
function dependencyKey(on: unknown): string {
  if (on === undefined || on === null || on === '') {
    throw new InvalidInputError('a dependency needs the task it waits for', 'name it with --on <key>');
  }
  return validateKey(on);
}
