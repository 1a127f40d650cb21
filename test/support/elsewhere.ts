/**
 * A script run in a Node process of its own, for tests where no in-process queue may order the
 * work (several `baton up` on one machine, say): src/os/worktree-race.test.ts and
 * worktree-add-race.test.ts.
 */
import { spawn } from 'node:child_process';

/** Runs an ES module script in a Node process of its own; its output (stdout and stderr) once it exits. */
export function runElsewhere(script: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: process.env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', () => resolve(out.trim()));
  });
}
