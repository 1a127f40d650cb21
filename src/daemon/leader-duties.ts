/**
 * Work `baton up` does only while it leads, beside dispatch and sealing, handed in by the
 * composition root so the daemon knows nothing of what it is (today: the GitHub backlog's sync
 * and label projector, src/github/). Each duty runs on its own timer; a pass that fails is logged
 * (once per new message) and tried again at the next tick; a standby never runs one.
 */
import type { Clock } from '../core/time.js';

export interface LeaderDuty {
  readonly name: string;
  readonly everyMs: number;
  run(): Promise<void>;
}

export class LeaderDuties {
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];

  constructor(
    private readonly options: {
      readonly duties: readonly LeaderDuty[];
      readonly clock: Clock;
      readonly leading: () => boolean;
      readonly log: (line: string) => void;
    },
  ) {}

  start(): void {
    if (this.loops.length > 0) return;
    this.loops = this.options.duties.map((duty) => this.loop(duty));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async loop(duty: LeaderDuty): Promise<void> {
    let lastFailure = '';
    while (!this.abort.signal.aborted) {
      const leading = this.options.leading();
      if (leading) {
        try {
          await duty.run();
          lastFailure = '';
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (message !== lastFailure) this.options.log(`${duty.name} failed: ${message}`);
          lastFailure = message;
        }
      }
      // A standby looks again soon, so a new leader's first pass does not wait a whole period.
      const napMs = leading ? duty.everyMs : Math.min(duty.everyMs, 500);
      await this.options.clock.sleep(napMs, this.abort.signal).catch(() => undefined);
    }
  }
}
