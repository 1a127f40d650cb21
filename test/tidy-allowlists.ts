/**
 * The exceptions tidy knows about. The list only shrinks: tidy fails when an entry is no longer
 * needed (an export got imported), so the list never hides a fixed case. Functions have no
 * allowlist: since issue 16 every function that ships is at most 70 lines.
 */

const TESTED = 'imported by its unit test only; the code that ships uses it in its own file';

/**
 * Exported values that no shipping code imports, each with the reason it stays exported: each is
 * used by tests by design.
 */
export const DEAD_EXPORTS_ALLOWED: Readonly<Record<string, string>> = {
  'src/cli/launch.ts:launch': 'bin/baton.js, which the scan does not read, runs the CLI through it',
  'src/cli/launch.ts:bundleFor': 'bin/baton.js, which the scan does not read, picks the bundle with it',
  'src/cli/agent-main.ts:main':
    "the agent's bundle's entry: scripts/bundle-cli.mjs bundles it, the launcher runs it",
  'src/core/job.ts:isAllowedJobTransition': 'the lifecycle as a predicate, for the unit and chaos checkers',
  'src/core/ledger.ts:encodeLeaves':
    "tests build checkpoints' leaves from ids and hex hashes with it; the layout itself is writeLeaf's, which the sealer calls",
  'src/store/postgres/dispatch.ts:ORPHANED_JOBS': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/dispatch.ts:ORPHANED_JOBS': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/postgres/hosts.ts:HOST_LIST': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/hosts.ts:HOST_LIST': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/postgres/hosts.ts:HOST_FLEET': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/hosts.ts:HOST_FLEET': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/postgres/dispatch-pass.ts:CANDIDATES': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/dispatch-pass.ts:CANDIDATES': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/dispatch-pass.ts:HELD': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/dispatch-pass.ts:BARE': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/postgres/time-limit-sweep.ts:DUE_SQL': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/sqlite/time-limit-sweep.ts:DUE_JOBS': 'its query plan is checked by fleet-plans.test.ts',
  'src/store/postgres/job-steps.ts:CLAIM_NEXT': 'its query plan is checked at scale by claim-plan.test.ts',
  'src/store/postgres/ledger.ts:UNSEALED_ROWS': 'its query plan is checked by ledger-plan.test.ts',
  'src/store/postgres/observe.ts:JOB_PAGE_SQL': 'its query plan is checked at scale by test/dashboard',
  'src/store/sqlite/observe.ts:JOB_PAGE_SQL': 'its query plan is checked at scale by test/dashboard',
  'src/store/sqlite/job-list.ts:allJobsSql':
    'its plans are checked at scale by test/dashboard/queue-scale.test.ts',
  'src/store/postgres/job-list.ts:allJobsSql':
    'its plans are checked at scale by test/dashboard/queue-scale.test.ts',
  'src/store/sqlite/observe.ts:jobPageSql':
    'its live-state plans are checked at scale by test/dashboard/queue-scale.test.ts',
  'src/store/postgres/lifecycle.ts:NEXT': 'its query plan is checked by task-plans.test.ts',
  'src/store/sqlite/lifecycle.ts:NEXT_CANDIDATE': 'its query plan is checked by task-plans.test.ts',
  'src/store/sqlite/tasks-claims.ts:listSql': 'its query plans are checked by task-plans.test.ts',
  'src/store/sqlite/output-trim.ts:TRIM_LIVE': 'its query plan is checked by trim-plans.test.ts',
  'src/store/sqlite/output-trim.ts:FINISHED_AFTER': 'its query plan is checked by trim-plans.test.ts',
  'src/store/sqlite/retention.ts:PICK': 'its query plan is checked by token-plans.test.ts',
  'src/store/sqlite/retention.ts:DELETE_TOKENS': 'its query plan is checked by token-plans.test.ts',
  'src/store/postgres/retention.ts:PRUNE': 'its generic plan is checked by generic-plans.test.ts',
  'src/store/sqlite/tokens.ts:LIST_LIVE': 'its query plan is checked by token-plans.test.ts',
  'src/store/postgres/tokens.ts:LIST_LIVE': 'its generic plan is checked by generic-plans.test.ts',
  'src/store/postgres/output-trim.ts:SHRINK_SQL': 'its generic plan is checked by generic-plans.test.ts',
  'src/store/postgres/output-trim.ts:DROP_SQL': 'its generic plan is checked by generic-plans.test.ts',
  'src/store/sqlite/task-page.ts:HOLDS': 'its query plan is checked by task-plans.test.ts',
  'src/store/postgres/task-page.ts:TASK_PAGE_SQL':
    'its query plan is checked at scale by tasks-scale.test.ts',
  'src/store/sqlite/task-page.ts:TASK_PAGE_SQL': 'its query plan is checked at scale by tasks-scale.test.ts',
  'src/http/fast-claims.ts:hotBody': TESTED,
  'src/store/postgres/pgpass.ts:passwordFromPassfile': TESTED,
  'src/store/postgres/pgpass.ts:lookUpPassword': TESTED,
  'src/store/postgres/rows-before-commit.ts:RowsBeforeCommitQuery': TESTED,
  'src/store/postgres/upkeep.ts:UpkeepSchedule': TESTED,
  'src/store/test-switches.ts:UNSAFE_ENV': 'test support sets it (test/support/clock.ts, harness.ts)',
  'src/store/test-switches.ts:TEST_CLOCK_ENV': 'test support sets it (test/support/clock.ts)',
  'src/store/test-switches.ts:moveClockSql': 'test support moves the shared clock with it',
  'src/store/test-switches.ts:CLOCK_TABLE':
    'test support drops it when it hands a test database back (pg-recycle.ts)',
  'src/store/conformance/index.ts:exerciseStore': 'the conformance suite, run by each engine test',
  'src/store/conformance/model.ts:StoreModel': 'the reference model of the property test',
  'src/core/token.ts:ACTIONS': TESTED,
  'src/core/token.ts:SCOPE_ACTIONS': TESTED,
  'src/github/webhook.ts:closingReferences': TESTED,
  'src/github/rate-limit.ts:limitMet': TESTED,
  'src/github/rate-limit.ts:waitsFor': TESTED,
  'src/http/app.ts:apiApp': TESTED,
  'src/http/app.ts:BODY_MAX': TESTED,
  'src/http/app.ts:WEBHOOK_BODY_MAX': TESTED,
  'src/daemon/worktree-sweep.ts:sweepWorktrees': TESTED,
  'src/coordinator/token-cache.ts:TokenCache': TESTED,
};
