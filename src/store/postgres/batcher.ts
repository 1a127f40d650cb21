/**
 * Gathers calls into batches without waiting for a timer: a call is sent at once while fewer
 * than `inFlight` batches are running; calls that arrive while all are running queue up and go
 * together, up to `maxBatch`, as soon as one returns. An idle caller pays no delay, and a busy
 * engine pays one statement, one commit and one round trip for many calls. `send` answers each
 * call with its own outcome; a batch that fails as a whole fails each of its calls with the same
 * error, as a statement of its own would have.
 */
import { settle, type Outcome } from '../outcome.js';

interface Pending<Req, Res> {
  readonly req: Req;
  readonly resolve: (res: Res) => void;
  readonly reject: (error: unknown) => void;
}

export class Batcher<Req, Res> {
  private readonly queue: Pending<Req, Res>[] = [];
  private running = 0;

  constructor(
    private readonly send: (reqs: readonly Req[]) => Promise<readonly Outcome<Res>[]>,
    private readonly inFlight: number,
    private readonly maxBatch: number,
  ) {}

  submit(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.inFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.running++;
      this.send(batch.map((params) => params.req))
        .then(
          (outcomes) =>
            batch.forEach((pending, index) => settle(outcomes[index], pending.resolve, pending.reject)),
          (error: unknown) => batch.forEach((params) => params.reject(error)),
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}
