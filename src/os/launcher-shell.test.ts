import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTools, Shell } from './launcher-shell.js';
import { waitUntil } from '../../test/support/wait.js';

// The runner killed after it asked for FIFOs and before it read the answer, made deterministic:
// the launcher's stdout loses its only reader before the request is even written, so its answer
// always meets a closed pipe. Without the answer's `trap '' PIPE` the launcher dies by SIGPIPE
// and never reaches the `rm` it runs at EOF, which leaves its directory behind.
test('a launcher whose reader is gone before its first answer lives on and removes its directory at EOF', async (t) => {
  const tools = findTools();
  if (tools === null) return t.skip('no mkfifo, setsid or rm on this host');
  const dir = mkdtempSync(join(tmpdir(), 'baton-launch-test-'));
  try {
    const shell = new Shell(
      tools,
      dir,
      () => {},
      () => {},
    );
    let ended: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    shell.child.once('exit', (code, signal) => (ended = { code, signal }));
    shell.child.stdout?.destroy(); // closes this process's end, the pipe's only reader
    void shell.mkfifo(1, [join(dir, '1.out'), join(dir, '1.in')]);
    // A second request is run only by a launcher that lived through its answer to the first.
    void shell.mkfifo(2, [join(dir, '2.out'), join(dir, '2.in')]);
    await waitUntil(
      () => existsSync(join(dir, '2.in')) || ended !== null,
      5000,
      'the second FIFOs or an end',
    );
    assert.equal(ended, null, 'the launcher still runs after answering into a closed pipe');
    shell.child.stdin?.end(); // the runner gone: EOF
    await waitUntil(() => ended !== null, 5000, 'the launcher ended');
    assert.deepEqual(ended, { code: 0, signal: null }, 'ended by its `rm`, not by SIGPIPE');
    assert.ok(!existsSync(dir), 'the launcher removed its directory');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
