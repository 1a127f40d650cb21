/**
 * Group commit for one SQLite connection: calls made in the same turn of the event loop (several
 * workers of one process, each resuming from its previous answer) run in one BEGIN IMMEDIATE
 * transaction, each inside a savepoint of its own, so one commit and one fsync serve them all
 * while each call still succeeds or fails alone. A call waits at most until the event loop's
 * check phase (setImmediate): no timer, no added delay worth measuring.
 */
import { settle, type Outcome } from '../outcome.js';
import type { SqliteExecutor } from './executor.js';

interface Pending<Req, Res> {
  readonly req: Req;
  readonly resolve: (res: Res) => void;
  readonly reject: (error: unknown) => void;
}

export class TickBatcher<Req, Res> {
  private queue: Pending<Req, Res>[] = [];
  private scheduled = false;

  constructor(
    private readonly exec: SqliteExecutor,
    private readonly work: (req: Req) => Res,
    /** false: commit without an fsync of its own (SqliteExecutor.writeNotDurable). */
    private readonly durable = true,
  ) {}

  submit(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    const write = this.durable ? this.exec.write.bind(this.exec) : this.exec.writeNotDurable.bind(this.exec);
    const each = (): Outcome<Res>[] =>
      batch.map((pending) => {
        try {
          // A nested better-sqlite3 transaction is a savepoint: a call that throws undoes only itself.
          return { ok: true as const, value: this.exec.db.transaction(() => this.work(pending.req))() };
        } catch (error) {
          return { ok: false as const, error };
        }
      });
    // A locked file is waited out asynchronously (SqliteExecutor.later), like any port call.
    const committed = this.exec.later(() => Promise.resolve(write(each)));
    committed.then(
      (outcomes: Outcome<Res>[]) =>
        batch.forEach((pending, index) => settle(outcomes[index], pending.resolve, pending.reject)),
      // The transaction itself failed: nothing committed.
      (error: unknown) => {
        for (const pending of batch) pending.reject(error);
      },
    );
  }
}
