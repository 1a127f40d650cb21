/**
 * Password-less database URLs, as libpq allows them: the password comes from PGPASSWORD, else
 * from the password file (PGPASSFILE, default ~/.pgpass), so no URL that Baton writes down or
 * hands to an agent needs to carry one. pg reads PGPASSWORD itself; it reads the file too, but
 * through a path it has deprecated (a warning on every CLI call), so the file is read here, with
 * libpq's rules: `host:port:database:user:password` lines, `*` matching anything, `\:` and `\\`
 * escapes, the first match wins, and a file that others may read is ignored with a warning.
 */
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

interface Target {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
}

/** The file libpq would read, or null when PGPASSFILE is unset and there is no home directory. */
function passfilePath(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env['PGPASSFILE'];
  if (named !== undefined && named !== '') return named;
  const home = env['HOME'] ?? homedir();
  return home === '' ? null : join(home, '.pgpass');
}

/** Splits one line at unescaped colons, undoing `\:` and `\\`. */
function fields(line: string): string[] {
  const out: string[] = [];
  let field = '';
  for (let index = 0; index < line.length; index++) {
    const ch = line[index];
    if (ch === '\\' && index + 1 < line.length) field += line[++index];
    else if (ch === ':') {
      out.push(field);
      field = '';
    } else field += ch;
  }
  out.push(field);
  return out;
}

/** The password for `target` in the passfile's text, or null. */
export function passwordFromPassfile(text: string, target: Target): string | null {
  // A Unix socket matches the host name "localhost", as in libpq.
  const host = target.host.startsWith('/') || target.host === '' ? 'localhost' : target.host;
  const wanted = [host, String(target.port), target.database, target.user];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || line.startsWith('#')) continue;
    const entry = fields(line);
    if (entry.length < 5) continue;
    if (wanted.every((want, index) => entry[index] === '*' || entry[index] === want))
      return entry.slice(4).join(':');
  }
  return null;
}

/** The passfile's password for the target, or null (no file, no match, or a file others can read). */
export function lookUpPassword(target: Target, warn: (line: string) => void): string | null {
  const path = passfilePath();
  if (path === null) return null;
  try {
    const st = statSync(path);
    if (!st.isFile()) return null;
    if ((st.mode & 0o077) !== 0) {
      warn(`password file ${path} has group or world access (permissions should be u=rw (0600) or less)`);
      return null;
    }
    return passwordFromPassfile(readFileSync(path, 'utf8'), target);
  } catch {
    return null;
  }
}

const warnOnce = (() => {
  let warned = false;
  return (line: string): void => {
    if (warned) return;
    warned = true;
    process.stderr.write(`baton: warning: ${line}\n`);
  };
})();

/**
 * pg's Client, which takes the password from the passfile when neither the URL nor PGPASSWORD
 * gives one. Pools take it as their `Client`. A connection that fails closes its socket: pg leaves
 * it open after a failure of its own (SCRAM asked for a password and none was given), and the open
 * socket kept every command, hook and agent call running after it had said what was wrong.
 */
export class PassfileClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const self = this as unknown as {
      password: string | null;
      connectionParameters: Target;
      connection: { on(event: 'error', listener: () => void): void; stream: { destroy(): void } };
    };
    if (self.password === null || self.password === '') {
      const found = lookUpPassword(self.connectionParameters, warnOnce);
      if (found !== null) self.password = found;
    }
    // After pg has handled the error (its listener comes later, in the same emit): never before.
    self.connection.on('error', () => setImmediate(() => self.connection.stream.destroy()));
  }
}
