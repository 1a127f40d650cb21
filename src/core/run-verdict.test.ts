import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeRun, type RunObservation } from './run-verdict.js';

const seen = (o: Partial<RunObservation> = {}): RunObservation => ({
  killedFor: null,
  exit: { code: 0, signal: null },
  oomInScope: false,
  oomOnMachine: false,
  peakRssMb: 10,
  budgetMb: 100,
  containment: 'cgroup1',
  stallReason: null,
  ...o,
});

describe('judgeRun', () => {
  test('a clean exit is done and a non-zero exit failed with its code, the tail kept only on failure', () => {
    assert.deepEqual(judgeRun(seen()), {
      kind: 'finish',
      status: 'done',
      exitCode: 0,
      reason: null,
      keepTail: false,
      release: 'done',
      log: 'done',
    });
    const failed = judgeRun(seen({ exit: { code: 3, signal: null } }));
    assert.equal(failed.kind === 'finish' && failed.status, 'failed');
    assert.equal(failed.kind === 'finish' && failed.reason, 'exit code 3');
    assert.equal(failed.kind === 'finish' && failed.keepTail, true);
  });

  test("the shell's own exits 126 and 127 are named in the reason, with the check that finds the cause", () => {
    const missing = judgeRun(seen({ exit: { code: 127, signal: null } }));
    assert.equal(missing.kind === 'finish' && missing.exitCode, 127);
    assert.match(
      missing.kind === 'finish' ? (missing.reason ?? '') : '',
      /^exit code 127: as the shell exits when it finds no such command .*baton doctor --agent-command/,
    );
    assert.match(missing.kind === 'finish' ? missing.log : '', /^failed \(exit code 127: /);
    const denied = judgeRun(seen({ exit: { code: 126, signal: null } }));
    assert.match(denied.kind === 'finish' ? (denied.reason ?? '') : '', /^exit code 126: .*could not run it/);
  });

  test('a fenced run writes nothing to the job and releases nothing, whatever the exit said', () => {
    assert.deepEqual(judgeRun(seen({ killedFor: 'fenced', exit: { code: 0, signal: null } })), {
      kind: 'leave',
      release: null,
      log: 'agent killed (fenced)',
    });
  });

  test("an agent that exited 0 before its runner's own fence keeps its success; any other end under it is left", () => {
    const exited = (code: number | null, signal: string | null) =>
      judgeRun(seen({ killedFor: 'fenced', runnerFenced: true, exit: { code, signal } }));
    assert.deepEqual(exited(0, null), {
      kind: 'finish',
      status: 'done',
      exitCode: 0,
      reason: null,
      keepTail: false,
      release: 'done',
      log: "done: exited 0 before its runner's fence",
    });
    // Killed by the fence (SIGKILL), by its shim's watchdog (exit 114), or failing on its own.
    for (const [code, signal] of [
      [null, 'SIGKILL'],
      [114, null],
      [1, null],
    ] as const)
      assert.deepEqual(exited(code, signal), { kind: 'leave', release: null, log: 'agent killed (fenced)' });
    const oom = judgeRun(seen({ killedFor: 'fenced', runnerFenced: true, oomInScope: true }));
    assert.equal(oom.kind === 'finish' && oom.status, 'oom_killed');
  });

  test('a cancelled run releases its claim without a verdict; an escalated one leaves it', () => {
    assert.equal(judgeRun(seen({ killedFor: 'cancelled' })).kind, 'leave');
    const escalated = judgeRun(seen({ killedFor: 'escalated' }));
    assert.equal(escalated.kind === 'leave' && escalated.release, null);
  });

  test('a run past its budget is oom_killed, naming who enforced it', () => {
    const byRunner = judgeRun(
      seen({ killedFor: 'oom', peakRssMb: 150.4, exit: { code: null, signal: 'SIGKILL' } }),
    );
    assert.equal(byRunner.kind === 'finish' && byRunner.reason, 'RSS 150 MB passed the 100 MB budget');
    const byCgroup = judgeRun(seen({ oomInScope: true, exit: { code: null, signal: 'SIGKILL' } }));
    assert.match(byCgroup.kind === 'finish' ? (byCgroup.reason ?? '') : '', /at its 100 MB budget \(cgroup1/);
    const byKernel = judgeRun(seen({ oomOnMachine: true, exit: { code: null, signal: 'SIGKILL' } }));
    assert.equal(byKernel.kind === 'finish' && byKernel.status, 'oom_killed');
    assert.equal(byKernel.kind === 'finish' && byKernel.reason, 'killed by the kernel OOM killer');
  });

  test("the runner's own budget kill is named as such even when another process met the OOM killer meanwhile", () => {
    const v = judgeRun(
      seen({ killedFor: 'oom', oomOnMachine: true, peakRssMb: 161, exit: { code: null, signal: 'SIGKILL' } }),
    );
    assert.equal(v.kind === 'finish' && v.reason, 'RSS 161 MB passed the 100 MB budget');
  });

  test('a signal nobody here sent is a crash to retry, not a verdict', () => {
    assert.deepEqual(judgeRun(seen({ exit: { code: null, signal: 'SIGSEGV' } })), {
      kind: 'requeue',
      reason: 'agent killed by SIGSEGV',
      release: 'failed',
      attemptCounts: true,
    });
  });

  test('a run its runner shut down is requeued, its claim released and its attempt given back', () => {
    assert.deepEqual(judgeRun(seen({ killedFor: 'shutdown', exit: { code: null, signal: 'SIGKILL' } })), {
      kind: 'requeue',
      reason: 'runner shut down',
      release: 'released',
      attemptCounts: false,
    });
  });

  test('a stalled run fails with the stall as its reason', () => {
    const v = judgeRun(seen({ killedFor: 'stalled', stallReason: 'stalled: no progress for 900 s' }));
    assert.equal(v.kind === 'finish' && v.reason, 'stalled: no progress for 900 s');
    assert.equal(v.kind === 'finish' && v.release, 'failed');
  });

  test('a run past its time limit fails with the limit as its reason, its output kept, not requeued', () => {
    const reason = 'timed out: ran past its time limit of 2 s (started 2026-12-05T22:00:00.000Z)';
    // The kill's SIGKILL is ours: not the crash that a signal nobody sent would be (requeued).
    const v = judgeRun(
      seen({ killedFor: 'timed_out', timeoutReason: reason, exit: { code: null, signal: 'SIGKILL' } }),
    );
    assert.deepEqual(v, {
      kind: 'finish',
      status: 'failed',
      exitCode: null,
      reason,
      keepTail: true,
      release: 'failed',
      log: `failed, ${reason}`,
    });
    const bare = judgeRun(seen({ killedFor: 'timed_out' }));
    assert.equal(bare.kind === 'finish' && bare.reason, 'timed out');
  });
});
