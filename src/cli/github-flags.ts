/**
 * The flags `baton github sync` and `baton up --github` share: the token's variable, label names,
 * comments on or off, and the backlog they open (src/github/backlog.ts).
 */
import { allowed } from '../daemon/agent-env.js';
import type { Command } from 'commander';
import type { Hono } from 'hono';
import { InvalidInputError } from '../core/errors.js';
import { DEFAULT_GITHUB_LABELS, parseRepo, tokenVariable, validateLabelNames } from '../core/github.js';
import type { Store } from '../store/store.js';
import type { Backlog } from '../github/backlog.js';
import { parseAuthors } from '../github/trust.js';

export interface GithubFlags {
  readonly tokenEnv?: string;
  readonly labelWip?: string;
  readonly labelQueued?: string;
  readonly labelHuman?: string;
  readonly labelDesign?: string;
  /** commander's negation of --no-comments / --no-github-comments */
  readonly comments?: boolean;
  readonly githubComments?: boolean;
  /** --github-authors: whose issues are imported (src/github/trust.ts). */
  readonly githubAuthors?: string;
}

export function githubOptions(command: Command): Command {
  return command
    .option('--token-env <name>', 'the variable holding the GitHub token (default GITHUB_TOKEN)')
    .option('--label-wip <name>', 'label while a claim or a running job exists (default WIP)')
    .option('--label-queued <name>', 'label while a job is queued or placed (default ai-dev-queued)')
    .option('--label-human <name>', 'label while the task is escalated (default human-action)')
    .option(
      '--label-design <name>',
      'label that puts an issue behind the design gate (default needs-design-review)',
    )
    .option(
      '--github-authors <which>',
      "whose issues are imported, by GitHub's author association: members (OWNER, MEMBER, " +
        'COLLABORATOR; the default), any, or a list such as members,CONTRIBUTOR',
    );
}

/**
 * The flags' checks, made before the store is opened, so bad input changes nothing (not even a
 * new database file): the repository's form, the token's variable and presence, the label names.
 */
export function checkGithubFlags(repo: string, flags: GithubFlags): void {
  parseRepo(repo);
  parseAuthors(flags.githubAuthors);
  // The name's form first: `export 1X=…` is no advice to give.
  const name = tokenVariable(flags.tokenEnv);
  if ((process.env[name] ?? '') === '') {
    throw new InvalidInputError(
      `${name} is not set: Baton needs a GitHub token to read and label issues`,
      `export ${name}=<a token with issues read and write>, or name another variable with --token-env`,
    );
  }
  validateLabelNames({
    ...DEFAULT_GITHUB_LABELS,
    ...(flags.labelWip === undefined ? {} : { wip: flags.labelWip }),
    ...(flags.labelQueued === undefined ? {} : { queued: flags.labelQueued }),
    ...(flags.labelHuman === undefined ? {} : { human: flags.labelHuman }),
    ...(flags.labelDesign === undefined ? {} : { designReview: flags.labelDesign }),
  });
}

/**
 * `baton up --github`: the token's variable must not be one every agent inherits. Agents get
 * every BATON_* and LC_* variable of the runner's environment and each one --agent-env names
 * (daemon/agent-env.ts), so a GitHub token in BATON_GH, LC_GH or an --agent-env GH_* would reach
 * each agent's environment, and so the model's hands. BATON_* is refused whole (BATON_TOKEN too).
 */
export function checkTokenStaysWithRunner(flags: GithubFlags, agentEnv: readonly string[]): void {
  const name = flags.tokenEnv ?? 'GITHUB_TOKEN';
  if (name.startsWith('BATON_')) {
    throw new InvalidInputError(
      `--token-env ${name}: every agent baton up starts inherits the BATON_* variables, ` +
        'so it would get the GitHub token',
      `keep the token in a variable outside BATON_*, such as GITHUB_TOKEN, and name that with --token-env`,
    );
  }
  if (!allowed(name, agentEnv)) return;
  const why = name.startsWith('LC_') ? 'the LC_* variables' : `${name}, as --agent-env allows`;
  throw new InvalidInputError(
    `--token-env ${name}: every agent baton up starts inherits ${why}, so it would get the GitHub token`,
    'keep the token in a variable no agent inherits (not LC_*, not named by --agent-env), and name it with --token-env',
  );
}

/** The flags of `baton up` and `baton serve` that only mean something with `--github`. */
export interface GithubOnlyFlags extends GithubFlags {
  readonly github?: string | undefined;
  readonly githubLabel?: readonly string[] | undefined;
  readonly githubEvery?: string | undefined;
}

/**
 * Refuses GitHub flags given without `--github`: each one says how to work a backlog that is not
 * there, and would otherwise be ignored without a word (a `--github-label` that filters nothing).
 */
export function checkGithubOnly(flags: GithubOnlyFlags): void {
  if (flags.github !== undefined) {
    checkImportLabels('--github-label', flags.githubLabel);
    return;
  }
  if (flags.githubLabel !== undefined) {
    throw new InvalidInputError(
      '--github-label filters the GitHub issues Baton imports, and no --github was given',
      'add --github <owner/repo>, or leave --github-label out',
    );
  }
  const given: readonly [string, boolean][] = [
    ['--github-every', flags.githubEvery !== undefined],
    ['--no-github-comments', flags.githubComments === false],
    ['--token-env', flags.tokenEnv !== undefined],
    ['--label-wip', flags.labelWip !== undefined],
    ['--label-queued', flags.labelQueued !== undefined],
    ['--label-human', flags.labelHuman !== undefined],
    ['--label-design', flags.labelDesign !== undefined],
    ['--github-authors', flags.githubAuthors !== undefined],
  ];
  const flag = given.find(([, isGiven]) => isGiven)?.[0];
  if (flag === undefined) return;
  throw new InvalidInputError(
    `${flag} is a setting of the GitHub backlog, and no --github was given`,
    `add --github <owner/repo>, or leave ${flag} out`,
  );
}

/** Labels to import by (`--github-label`, `--label`): GitHub's names are 1 to 50 characters. */
export function checkImportLabels(flag: string, labels: readonly string[] | undefined): void {
  for (const label of labels ?? []) {
    if (label.trim() === '' || label.length > 50) {
      throw new InvalidInputError(
        `${flag} ${JSON.stringify(label)} is not a GitHub label name`,
        `give a label of 1 to 50 characters, such as ai; repeat ${flag} for more`,
      );
    }
  }
}

/** Loaded on demand: octokit is not paid for by every other command's start. */
export async function backlogFrom(
  store: Store,
  repo: string,
  flags: GithubFlags,
  log: (line: string) => void,
): Promise<Backlog> {
  const { openBacklog } = await import('../github/backlog.js');
  return openBacklog({
    store,
    repo: parseRepo(repo),
    tokenEnv: flags.tokenEnv,
    env: process.env,
    labels: {
      ...(flags.labelWip === undefined ? {} : { wip: flags.labelWip }),
      ...(flags.labelQueued === undefined ? {} : { queued: flags.labelQueued }),
      ...(flags.labelHuman === undefined ? {} : { human: flags.labelHuman }),
      ...(flags.labelDesign === undefined ? {} : { designReview: flags.labelDesign }),
    },
    comments: flags.comments !== false && flags.githubComments !== false,
    authors: parseAuthors(flags.githubAuthors),
    log,
  });
}

/**
 * The webhook (`POST /v1/github/webhook`) of the backlog, when GITHUB_WEBHOOK_SECRET is set; GitHub
 * signs each delivery with it, so no bearer token is asked.
 */
export function webhookOf(backlog: Backlog | null, labels: readonly string[], env = process.env): Hono[] {
  const secret = env['GITHUB_WEBHOOK_SECRET'] ?? '';
  return backlog === null || secret === '' ? [] : [backlog.webhook(secret, labels)];
}
