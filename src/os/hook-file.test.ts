/**
 * A hook rewritten while other processes run it (hook-file.ts): real files, a real shell exec'ing
 * the hook in a loop while it is written again and again.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHookFile } from './hook-file.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-hook-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const script = (n: number): string => `#!/bin/sh\n# version ${n}\nexit 0\n`;

/** A shell exec's `hook` `times` times in a loop while `rewrite(n)` writes it again and again. */
async function execWhileRewriting(
  hook: string,
  times: number,
  rewrite: (n: number) => unknown,
): Promise<{ code: number | null; stderr: string }> {
  const runs = spawn('/bin/sh', [
    '-c',
    `i=0; while [ $i -lt ${times} ]; do "${hook}" || exit 1; i=$((i+1)); done`,
  ]);
  let stderr = '';
  runs.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<number | null>((done) => runs.on('close', (code) => done(code)));
  let running = true;
  void ended.then(() => (running = false));
  for (let n = 1; running; n++) {
    rewrite(n);
    await new Promise((r) => setImmediate(r));
  }
  return { code: await ended, stderr };
}

describe('writing a hook that may be running', () => {
  test('leaves an unchanged hook untouched and replaces a changed one whole, executable', () => {
    const hook = join(dir, 'pre-push');
    assert.equal(writeHookFile(hook, script(1)), true);
    const first = statSync(hook);
    assert.equal(first.mode & 0o777, 0o755);
    assert.equal(writeHookFile(hook, script(1)), false);
    assert.equal(statSync(hook).ino, first.ino, 'an unchanged hook is not written again');
    assert.equal(writeHookFile(hook, script(2)), true);
    assert.notEqual(statSync(hook).ino, first.ino, 'a changed hook is a new file renamed over the old');
    assert.equal(readFileSync(hook, 'utf8'), script(2));
  });

  test('a hook exec’d in a loop while it is rewritten never fails with "Text file busy"', async () => {
    const hook = join(dir, 'commit-msg');
    writeHookFile(hook, script(0));
    const { code, stderr } = await execWhileRewriting(hook, 400, (n) => writeHookFile(hook, script(n)));
    assert.equal(code, 0, stderr);
  });

  test('the control: writing the hook in place while it is exec’d fails an exec or the write', async () => {
    // The race goes either way: an exec of the file open for writing fails ("Text file busy"),
    // and so does opening for writing a file being exec'd (ETXTBSY), which ends the loop here.
    const hook = join(dir, 'control');
    writeFileSync(hook, script(0), { mode: 0o755 });
    let writeRefused = false;
    const { code, stderr } = await execWhileRewriting(hook, 4000, (n) => {
      if (writeRefused) return;
      try {
        writeFileSync(hook, script(n), { mode: 0o755 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ETXTBSY') throw error;
        writeRefused = true;
      }
    });
    assert.ok(writeRefused || (code !== 0 && /Text file busy/.test(stderr)), `exit ${code}: ${stderr}`);
  });
});
