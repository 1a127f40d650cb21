/**
 * `baton github sync <owner/repo>`: imports the repository's open issues as tasks keyed
 * `github:owner/repo#N` and brings known ones up to date (closed on GitHub: closed or done here).
 * One pass and exit; with `--every` it keeps running. `--project` also applies the label outbox
 * once per pass, for a setup without `baton up --github` (which projects on its leader).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { GithubUnavailableError, InvalidInputError } from '../../core/errors.js';
import { validateDuration } from '../../core/validate.js';
import type { SyncReport } from '../../github/sync.js';
import { GithubStoppedError } from '../../github/stop.js';
import {
  backlogFrom,
  checkGithubFlags,
  checkImportLabels,
  githubOptions,
  type GithubFlags,
} from '../github-flags.js';
import { jsonText, terminalText } from '../output.js';
import { collect, refuseRemote, withStore } from '../run.js';
import { checkArgvSecrets } from '../argv-secrets.js';
import { stopOnClosedOutput } from '../stdio.js';

interface SyncFlags extends GithubFlags {
  readonly label?: readonly string[];
  readonly every?: string;
  readonly project?: boolean;
}

export function registerGithub(program: Command): void {
  const github = program.command('github').description('work a GitHub backlog: issues in, labels out');
  githubOptions(
    github
      .command('sync <repo>')
      .description('import open issues of owner/repo as tasks github:owner/repo#N; one pass unless --every')
      .option('--label <name>', 'import only issues with this label; repeatable (any of them)', collect)
      .option('--every <duration>', 'keep running, a pass every so often, such as 60s')
      .option('--project', 'also apply pending label changes and comments after each pass')
      .option(
        '--no-comments',
        'with --project: do not post escalations, rejections and resolve notes as comments',
      ),
  ).action((repo: string, flags: SyncFlags, cmd: Command) => {
    // First: over the HTTP API no flag of it can be put right, so that is what to say.
    refuseRemote(cmd);
    checkGithubFlags(repo, flags);
    checkImportLabels('--label', flags.label);
    if (flags.comments === false && flags.project !== true) {
      // The comments are the projector's: without --project the flag would be ignored without a word.
      throw new InvalidInputError(
        '--no-comments is a setting of --project, and no --project was given',
        'add --project (labels and comments after each pass), or leave --no-comments out',
      );
    }
    const everyMs =
      flags.every === undefined ? null : validateDuration('--every', flags.every, 1000, 86_400_000);
    return withStore(cmd, async (store, out) => {
      // Once every flag was accepted and the store opened: a refusal stays one line.
      if (everyMs !== null) checkArgvSecrets('github sync --every', cmd.optsWithGlobals(), false);
      const log = (line: string): void => {
        if (!out.json) process.stderr.write(`${terminalText(line)}\n`);
      };
      const backlog = await backlogFrom(store, repo, flags, log);
      const stop = new AbortController();
      const leave = (): void => stop.abort();
      process.once('SIGINT', leave);
      process.once('SIGTERM', leave);
      if (everyMs !== null) stopOnClosedOutput('baton github sync --every', 'stopping as on SIGTERM', leave);
      // With --every a stop ends a pass at once, even in a rate limit's wait (GithubStoppedError).
      const signal = everyMs === null ? undefined : stop.signal;
      for (;;) {
        const pass = async () => {
          const report = await backlog.sync({ labels: flags.label ?? [], signal });
          const projected = flags.project === true ? await backlog.project(signal) : null;
          return { report, value: projected === null ? report : { ...report, projected } };
        };
        if (everyMs === null) {
          const { report, value } = await pass();
          out.result(value, () => summary(report));
          return;
        }
        // Kept running: a pass GitHub refused is reported, and the next one tries again.
        const line = await pass().then(
          ({ report, value }) => (out.json ? jsonText(value) : summary(report)),
          (error: unknown) => failedPass(error, stop.signal.aborted, out.json),
        );
        process.stdout.write(`${line}\n`);
        // Ended early by a signal; the wait takes its abort listener away either way (one added per
        // pass and never removed made Node warn MaxListenersExceededWarning after 11 passes).
        await sleep(everyMs, undefined, { signal: stop.signal }).catch(() => undefined);
        if (stop.signal.aborted) return;
      }
    });
  });
}

/**
 * The line a failed pass of `--every` prints: a stop (GithubStoppedError after SIGTERM) is said, and
 * the loop then ends, exit 0; GitHub unavailable is said, the next pass tries again. Anything else
 * is thrown, stopped or not (a StoreUnavailableError keeps its exit 5).
 */
export function failedPass(error: unknown, stopped: boolean, json: boolean): string {
  if (stopped && error instanceof GithubStoppedError) {
    return json ? jsonText({ stopped: error.message }) : error.message;
  }
  if (!(error instanceof GithubUnavailableError)) throw error;
  return json ? jsonText({ error: error.code, message: error.message }) : `${error.message}; next pass later`;
}

function summary(report: SyncReport): string {
  if (report.notModified)
    return `${report.repo}: nothing changed on GitHub since ${report.since ?? 'the last pass'}`;
  const parts = Object.entries({
    added: report.added,
    updated: report.updated,
    closed: report.closed,
    done: report.done,
    reopened: report.reopened,
    gated: report.gated,
    escalated: report.escalated,
    'labels repaired': report.repaired,
    'passed over (author not trusted: --github-authors)': report.passedOver,
  })
    .filter(([, count]) => count > 0)
    .map(([what, count]) => `${count} ${what}`);
  const changes = parts.length > 0 ? parts.join(', ') : 'no change';
  return `${report.repo}: ${report.seen} issues read in ${report.pages} page(s); ${changes}`;
}
