/**
 * A TCP proxy between the chaos processes and PostgreSQL, one listening port per process, that
 * can cut a process off. It reads just enough of the wire protocol to find message boundaries:
 *
 *   blackhole(slot, ms)  every connection of the slot, and any it opens meanwhile, stops
 *                        forwarding in both directions; after `ms` they are closed
 *   dropReply(slot)      the next write statement (Bind of an INSERT/UPDATE/DELETE/WITH, or a
 *                        simple COMMIT) on the slot goes through; the server's whole reply, up
 *                        to ReadyForQuery, is swallowed and the connection closed, so the write
 *                        committed but the client cannot know: an unknown outcome
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Conn {
  readonly client: Socket;
  upstream: Socket | null;
  blackholed: boolean;
  /** The reply to a write is being swallowed. */
  dropping: boolean;
  fromClient: Buffer;
  fromServer: Buffer;
  startupDone: boolean;
  /** Prepared statement name → SQL text. */
  readonly statements: Map<string, string>;
}

interface Slot {
  readonly server: Server;
  readonly port: number;
  readonly conns: Set<Conn>;
  blackholeUntil: number;
  dropArmed: ((detail: string) => void) | null;
}

const WRITE = /^\s*(insert|update|delete|commit)\b|^\s*with\b[\s\S]*\b(insert|update|delete)\b/i;

export class PgProxy {
  private readonly slots = new Map<string, Slot>();

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Opens a port for `slot`; returns it. */
  async add(slot: string): Promise<number> {
    const conns = new Set<Conn>();
    const server = createServer((client) => this.accept(slot, client));
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    this.slots.set(slot, { server, port, conns, blackholeUntil: 0, dropArmed: null });
    return port;
  }

  /** The local ports of the slot's connections to PostgreSQL (pg_stat_activity.client_port). */
  upstreamPorts(slot: string): number[] {
    const s = this.slots.get(slot);
    if (s === undefined) return [];
    return [...s.conns].flatMap((c) => (c.upstream?.localPort === undefined ? [] : [c.upstream.localPort]));
  }

  connections(slot: string): number {
    return this.slots.get(slot)?.conns.size ?? 0;
  }

  blackhole(slot: string, ms: number): void {
    const s = this.slots.get(slot);
    if (s === undefined) return;
    s.blackholeUntil = Date.now() + ms;
    for (const c of s.conns) c.blackholed = true;
    setTimeout(() => this.endBlackhole(slot), ms).unref();
  }

  /** Ends a blackhole now (the drain heals everything). */
  endBlackhole(slot: string): void {
    const s = this.slots.get(slot);
    if (s === undefined) return;
    s.blackholeUntil = 0;
    for (const c of [...s.conns]) if (c.blackholed) this.close(s, c);
  }

  /** Arms a dropped reply; `onDrop` is told which statement it hit. */
  dropReply(slot: string, onDrop: (detail: string) => void): void {
    const s = this.slots.get(slot);
    if (s !== undefined) s.dropArmed = onDrop;
  }

  disarm(slot: string): boolean {
    const s = this.slots.get(slot);
    const armed = s?.dropArmed != null;
    if (s !== undefined) s.dropArmed = null;
    return armed;
  }

  healAll(): void {
    for (const slot of this.slots.keys()) {
      this.disarm(slot);
      this.endBlackhole(slot);
    }
  }

  async close(): Promise<void>;
  close(s: Slot, c: Conn): void;
  close(s?: Slot, c?: Conn): void | Promise<void> {
    if (s !== undefined && c !== undefined) {
      s.conns.delete(c);
      c.client.destroy();
      c.upstream?.destroy();
      return;
    }
    return Promise.all(
      [...this.slots.values()].map((slot) => {
        for (const conn of [...slot.conns]) this.close(slot, conn);
        return new Promise<void>((resolve) => slot.server.close(() => resolve()));
      }),
    ).then(() => undefined);
  }

  private accept(slot: string, client: Socket): void {
    const s = this.slots.get(slot);
    if (s === undefined) return void client.destroy();
    const c: Conn = {
      client,
      upstream: null,
      blackholed: Date.now() < s.blackholeUntil,
      dropping: false,
      fromClient: Buffer.alloc(0),
      fromServer: Buffer.alloc(0),
      startupDone: false,
      statements: new Map(),
    };
    s.conns.add(c);
    client.on('error', () => this.close(s, c));
    client.on('close', () => this.close(s, c));
    client.on('data', (chunk: Buffer) => this.fromClient(s, c, chunk));
    if (c.blackholed) return; // accepted, never forwarded: the client's connect times out
    const upstream = connect(this.port, this.host);
    c.upstream = upstream;
    upstream.setNoDelay(true);
    upstream.on('error', () => this.close(s, c));
    upstream.on('close', () => this.close(s, c));
    upstream.on('data', (chunk: Buffer) => this.fromServer(s, c, chunk));
  }

  private fromClient(s: Slot, c: Conn, chunk: Buffer): void {
    if (c.blackholed || c.upstream === null) return;
    c.fromClient = Buffer.concat([c.fromClient, chunk]);
    const write = this.scanClient(c);
    if (write !== null && s.dropArmed !== null && !c.dropping) {
      const onDrop = s.dropArmed;
      s.dropArmed = null;
      c.dropping = true;
      onDrop(write);
    }
    c.upstream.write(chunk);
  }

  private fromServer(s: Slot, c: Conn, chunk: Buffer): void {
    if (c.blackholed) return;
    if (!c.dropping) {
      c.client.write(chunk);
      return;
    }
    // Swallow the reply; once ReadyForQuery is seen the write has committed: cut the client off.
    c.fromServer = Buffer.concat([c.fromServer, chunk]);
    for (;;) {
      if (c.fromServer.length < 5) return;
      const length = c.fromServer.readInt32BE(1);
      if (c.fromServer.length < 1 + length) return;
      const type = String.fromCharCode(c.fromServer[0] ?? 0);
      c.fromServer = c.fromServer.subarray(1 + length);
      if (type === 'Z') return this.close(s, c);
    }
  }

  /**
   * Consumes complete client messages, remembering prepared statements; returns the SQL of the
   * first write it sees (Bind of a write statement, or a simple-protocol write), or null.
   */
  private scanClient(c: Conn): string | null {
    let found: string | null = null;
    for (;;) {
      const b = c.fromClient;
      if (!c.startupDone) {
        if (b.length < 4) return found;
        const length = b.readInt32BE(0);
        if (b.length < length) return found;
        c.fromClient = b.subarray(length);
        c.startupDone = true;
        continue;
      }
      if (b.length < 5) return found;
      const length = b.readInt32BE(1);
      if (b.length < 1 + length) return found;
      const type = String.fromCharCode(b[0] ?? 0);
      const body = b.subarray(5, 1 + length);
      c.fromClient = b.subarray(1 + length);
      const [first, second] = cstrings(body, 2);
      if (type === 'P') c.statements.set(first ?? '', second ?? '');
      const sql = type === 'Q' ? (first ?? '') : type === 'B' ? (c.statements.get(second ?? '') ?? '') : '';
      if (found === null && WRITE.test(sql)) found = sql.replace(/\s+/g, ' ').slice(0, 80);
    }
  }
}

/** The first `n` NUL-terminated strings of a message body. */
function cstrings(body: Buffer, n: number): string[] {
  const out: string[] = [];
  let at = 0;
  while (out.length < n && at < body.length) {
    const end = body.indexOf(0, at);
    if (end < 0) break;
    out.push(body.toString('utf8', at, end));
    at = end + 1;
  }
  return out;
}
