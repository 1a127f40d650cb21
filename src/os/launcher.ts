/**
 * The launcher: one small shell per cgroup runner, started with `baton up`, that forks the agents,
 * so the big runner process never forks per job. A fork copies the forking process's page tables:
 * from `baton up` (80-250 MB resident) spawn() blocked its event loop for 6-45 ms per agent, from
 * a 2 MB `sh` a fork takes well under a millisecond (decision 0019, section 5).
 *
 * An agent is forked in two steps. `prepare` forks its process (a watcher forks it and reports
 * `p <id> <pid>`, waits for it and reports `x <id> <status>`): it enters the job's cgroups at
 * once, the slow part of a start (moving a process between cgroups waits for an RCU grace period,
 * 9-24 ms here), and then waits on a FIFO of its own. That happens before any job comes, for the
 * runner's warm slot (warm-slot.ts), or as a run begins, while the runner makes its store calls.
 * It waits as a session of its own (`setsid`, before its command is known). `start` writes it one
 * line of shell (every value quoted here): change to its directory, export exactly the environment
 * asked for (the launcher runs with none) and exec `/bin/sh -c <command>`; `cancel` writes
 * `exit 0`. The agent gets what spawn() gave it: its own session, /dev/null for stdin, stdout and
 * stderr on a FIFO the runner reads into the job log, and its cgroups before its command runs.
 *
 * The launcher holds nothing the runner's guarantees rest on: the reaper still kills the job
 * cgroups when the runner dies (the launcher then reads EOF and ends), a fence still kills the
 * job's cgroups and tree by the pid reported. If the launcher dies, the watchers it forked still
 * report on the same pipe; a request it never answered (no pid within a grace) is reported as not
 * started, and the runner spawns that agent itself; the next request starts a new launcher.
 */
import { EventEmitter } from 'node:events';
import { closeSync, constants, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitOf, findTools, NAME, quote, Shell, type Tools } from './launcher-shell.js';

/** How long a request may go unanswered once its launcher died before it counts as never run. */
const ORPHAN_GRACE_MS = 1000;
/** How often outstanding agents are checked for a watcher that died without reporting. */
const WATCH_MS = 1000;
/** How long an agent's exit waits for the rest of its output (descendants may hold the FIFO). */
const DRAIN_MS = 100;
/** After this many launchers died, this runner spawns its agents itself. */
const MAX_STARTS = 5;
/** The largest start line written to a waiting agent: one write into an empty FIFO. */
const MAX_LINE = 60_000;

export interface StartRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
}

/** An agent the launcher forked: its pid, its output, and an `exit` event as a ChildProcess has. */
class LaunchedAgent extends EventEmitter {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  constructor(
    readonly pid: number,
    /** stdout and stderr together, as written. */
    readonly output: Socket,
  ) {
    super();
  }
}

interface Pending {
  /** The launcher that forked it: its pipe brings the answers, even after that launcher died. */
  readonly shell: Shell;
  readonly fifos: readonly string[];
  /** The output FIFO held open for writing too: no EOF before the agent opens it. */
  readonly keeper: number;
  readonly output: Socket;
  /** The control FIFO, opened read-write (never blocks) once the start or cancel is written. */
  control: number | null;
  readonly forked: Promise<LaunchedAgent | null>;
  answer: (agent: LaunchedAgent | null) => void;
  agent: LaunchedAgent | null;
  /** Told `exit 0` instead of a command. */
  cancelled: boolean;
  /** Its exit, once reported; emitted only after `start` returned the agent. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
  started: boolean;
  /** Monotonic ms when its pid was seen gone without an exit line, or null. */
  goneSince: number | null;
}

/** An agent's process, forked into its cgroups and waiting for its command. */
export interface WaitingAgent {
  /** Runs the command; null when it cannot (the caller then spawns the agent itself). */
  start(request: StartRequest): Promise<LaunchedAgent | null>;
  /** Ends the waiting process without running anything (idempotent; nothing after a start). */
  cancel(): void;
  /** Whether its process is still there and still waiting: not told a line yet, no exit reported. */
  waiting(): boolean;
}

export class Launcher {
  private shell: Shell | null = null;
  private starts = 0;
  private next = 0;
  /** The FIFOs' directory (private); removed at close, or by the launcher when its runner dies. */
  readonly dir: string;
  private readonly pending = new Map<number, Pending>();
  /** The FIFOs made ahead of the next agent (its output and its control). */
  private ready: { id: number; fifos: string[]; made: Promise<boolean> } | null = null;
  private readonly watch: NodeJS.Timeout;
  private closed = false;

  /** A launcher, or null where this host lacks `mkfifo`, `setsid` or `rm` (the runner then spawns). */
  static open(): Launcher | null {
    const tools = findTools();
    return tools === null ? null : new Launcher(tools);
  }

  private constructor(private readonly tools: Tools) {
    this.dir = mkdtempSync(join(tmpdir(), 'baton-launch-'));
    this.watch = setInterval(() => this.checkGone(), WATCH_MS);
    this.watch.unref();
    this.makeFifos();
  }

  /** The launcher's pid, or null while none runs. */
  get pid(): number | null {
    return this.shell?.alive === true ? (this.shell.child.pid ?? null) : null;
  }

  private live(): Shell | null {
    if (this.closed) return null;
    if (this.shell?.alive === true) return this.shell;
    if (this.starts >= MAX_STARTS) return null;
    this.starts++;
    this.shell = new Shell(
      this.tools,
      this.dir,
      (kind, id, value) => this.answer(kind, id, value),
      () => this.lost(),
    );
    return this.shell;
  }

  /** Makes the next agent's FIFOs now, so that agent does not wait for `mkfifo`. */
  private makeFifos(): void {
    const shell = this.live();
    if (shell === null) return;
    const id = ++this.next;
    const fifos = [join(this.dir, `${id}.out`), join(this.dir, `${id}.in`)];
    this.ready = { id, fifos, made: shell.mkfifo(id, fifos) };
  }

  /** The FIFOs made ahead (or asked for now), the next ones asked for at once. */
  private take(): { id: number; fifos: string[]; made: Promise<boolean> } | null {
    if (this.ready === null) this.makeFifos();
    const ready = this.ready;
    this.ready = null;
    this.makeFifos();
    return ready;
  }

  /**
   * Forks an agent's process into the cgroups whose cgroup.procs files are `enter` (writing 0
   * moves the writer); null when there is no launcher to do it.
   */
  async prepare(enter: readonly string[]): Promise<WaitingAgent | null> {
    // Taken before any await: runs starting together each get FIFOs of their own.
    let ready = this.take();
    if (ready === null || !(await ready.made)) {
      ready = this.take(); // a launcher that died meanwhile: a new one makes them
      if (ready === null || !(await ready.made)) return null;
    }
    const shell = this.live();
    if (shell === null) return null;
    const { id, fifos } = ready;
    const [out = '', control = ''] = fifos;
    let keeper: number;
    let output: Socket;
    try {
      keeper = openSync(out, constants.O_RDWR | constants.O_NONBLOCK);
      output = new Socket({ fd: openSync(out, constants.O_RDONLY | constants.O_NONBLOCK), writable: false });
    } catch {
      return null; // the launcher's directory went (closing): the run spawns its agent itself
    }
    let answer: (agent: LaunchedAgent | null) => void = () => {};
    const forked = new Promise<LaunchedAgent | null>((resolve) => (answer = resolve));
    const pending: Pending = {
      ...{ shell, fifos, keeper, output, control: null, forked, answer },
      ...{ agent: null, exit: null, started: false, cancelled: false, goneSince: null },
    };
    this.pending.set(id, pending);
    shell.hold();
    const enters = enter.map(
      (file) =>
        `{ echo 0 >${quote(file)}; } 2>/dev/null || ` +
        `{ echo ${quote(`baton: cannot enter cgroup ${file}`)} >&2; exit 125; }; `,
    );
    // In its cgroups, it becomes a session of its own (setsid execs in place: a background
    // subshell leads no process group), then waits: its start is one exec, not two. Its new shell
    // gets the launcher's NL, through which quote() writes a newline.
    const wait = ['exec', this.tools.setsid, '/bin/sh', '-c', 'NL="\n"; . "$1"', 'baton-agent', control]
      .map(quote)
      .join(' ');
    const agent = `( ${enters.join('')}${wait} ) </dev/null >${quote(out)} 2>&1`;
    shell.send(`( ${agent} & echo "p ${id} $!"; wait $!; echo "x ${id} $?" ) </dev/null &`);
    return {
      start: (request) => this.start(pending, request),
      cancel: () => void this.cancel(pending),
      // Forgotten as soon as its exit is reported (its output may still be draining).
      waiting: () =>
        this.pending.get(id) === pending && pending.control === null && pending.goneSince === null,
    };
  }

  private async start(pending: Pending, request: StartRequest): Promise<LaunchedAgent | null> {
    const exports = Object.entries(request.env).map(([name, value]) => `${name}=${quote(value)}`);
    const exec = [request.file, ...request.args].map(quote).join(' ');
    const line =
      `cd ${quote(request.cwd)} && ${exports.length === 0 ? ':' : `export ${exports.join(' ')}`} && ` +
      `exec ${exec}`;
    // A name `sh` cannot export, or a line too long for one write: spawned by the runner instead.
    if (Object.keys(request.env).some((name) => !NAME.test(name)) || Buffer.byteLength(line) > MAX_LINE) {
      this.cancel(pending);
      return null;
    }
    if (!this.tell(pending, line)) return null;
    const agent = await pending.forked;
    if (agent === null) return null;
    pending.started = true;
    const exit = pending.exit;
    if (exit !== null) setImmediate(() => agent.emit('exit', exit.code, exit.signal));
    return agent;
  }

  private cancel(pending: Pending): void {
    if (pending.started || !this.tell(pending, 'exit 0')) return;
    pending.cancelled = true;
    if (pending.exit !== null) pending.output.destroy();
  }

  /** Writes the waiting process its one line; false when it was written before. */
  private tell(pending: Pending, line: string): boolean {
    if (pending.control !== null) return false;
    const [, control = ''] = pending.fifos;
    try {
      // Read-write: opening never blocks, and the line waits in the FIFO for the process to read.
      pending.control = openSync(control, constants.O_RDWR | constants.O_NONBLOCK);
      writeSync(pending.control, `${line}\n`);
      return true;
    } catch {
      return false; // the FIFOs went with the launcher's directory: closing
    }
  }

  private answer(kind: string, id: number, value: number): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    if (kind === 'p') {
      pending.agent = new LaunchedAgent(value, pending.output);
      pending.answer(pending.agent);
    } else if (kind === 'x') {
      const { code, signal } = exitOf(value);
      this.finish(id, code, signal);
    }
  }

  /** Reports an agent's exit once its output is read (or after DRAIN_MS), and forgets it. */
  private finish(id: number, code: number | null, signal: NodeJS.Signals | null): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.forget(id, pending);
    let told = false;
    const tell = (): void => {
      if (told) return;
      told = true;
      clearTimeout(timer);
      for (const fifo of pending.fifos) {
        try {
          unlinkSync(fifo);
        } catch {
          // Removed with the directory already.
        }
      }
      const agent = pending.agent;
      if (agent === null) return;
      agent.exitCode = code;
      agent.signalCode = signal;
      pending.exit = { code, signal };
      if (pending.started) agent.emit('exit', code, signal);
      else if (pending.cancelled) pending.output.destroy(); // else start() tells its exit
    };
    const timer = setTimeout(tell, DRAIN_MS);
    pending.output.once('close', tell);
    pending.output.once('end', tell);
  }

  private forget(id: number, pending: Pending): void {
    this.pending.delete(id);
    closeSync(pending.keeper);
    if (pending.control !== null) closeSync(pending.control);
    pending.shell.release();
  }

  /** The launcher died: requests it never answered are not started, after a grace for watchers. */
  private lost(): void {
    const unanswered = [...this.pending.entries()]
      .filter(([, pending]) => pending.agent === null)
      .map(([id]) => id);
    setTimeout(() => {
      for (const id of unanswered) {
        const pending = this.pending.get(id);
        if (pending === undefined || pending.agent !== null) continue;
        this.forget(id, pending);
        pending.output.destroy();
        pending.answer(null);
      }
    }, ORPHAN_GRACE_MS).unref();
  }

  /**
   * An agent whose pid is gone (reaped) with no exit line for a whole check: its watcher was
   * killed. It is reported killed, so the run ends and its job goes back under the retry policy.
   */
  private checkGone(): void {
    const now = performance.now();
    for (const [id, pending] of this.pending) {
      if (pending.agent === null) continue;
      let gone = false;
      try {
        process.kill(pending.agent.pid, 0);
      } catch (error) {
        gone = (error as NodeJS.ErrnoException).code === 'ESRCH';
      }
      if (!gone) pending.goneSince = null;
      else if (pending.goneSince === null) pending.goneSince = now;
      else if (now - pending.goneSince >= WATCH_MS) this.finish(id, null, 'SIGKILL');
    }
  }

  /** Ends the launcher (its watchers end with their agents) and removes the FIFOs. */
  close(): void {
    this.closed = true;
    clearInterval(this.watch);
    this.shell?.child.stdin?.end();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
