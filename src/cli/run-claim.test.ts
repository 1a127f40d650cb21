/**
 * Whether a claim named on the command line is the one the runner made for this run (run-claim.ts
 * isRunsOwnClaim): each part read as the store reads it, anything not valid or unset no match.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRunsOwnClaim } from './run-claim.js';

const RUN = { BATON_KEY: 'github:acme/api#7', BATON_SESSION: '7', BATON_EPOCH: '3' };

test("a claim is the run's own when its key, session and epoch read as the run's", () => {
  const cases: [string, { session: string; epoch: string }, NodeJS.ProcessEnv, boolean][] = [
    ['github:acme/api#7', { session: '7', epoch: '3' }, RUN, true],
    ['github:acme/api#7', { session: '07', epoch: '03' }, RUN, true],
    ['github:acme/api#7', { session: '7', epoch: '3' }, { ...RUN, BATON_SESSION: '007' }, true],
    ['github:acme/api#7', { session: '7', epoch: '4' }, RUN, false],
    ['github:acme/api#8', { session: '7', epoch: '3' }, RUN, false],
    ['github:acme/api#7', { session: '8', epoch: '3' }, RUN, false],
    ['github:acme/api#7', { session: '7', epoch: '3' }, { ...RUN, BATON_EPOCH: '' }, false],
    ['github:acme/api#7', { session: '7', epoch: '3' }, { BATON_SESSION: '7', BATON_EPOCH: '3' }, false],
    ['github:acme/api#7', { session: 'x', epoch: '3' }, { ...RUN, BATON_SESSION: 'x' }, false],
    ['github:acme/api#7', { session: '7', epoch: '3' }, {}, false],
  ];
  for (const [key, given, env, own] of cases) {
    assert.equal(
      isRunsOwnClaim(key, given, env),
      own,
      `${key} ${JSON.stringify(given)} ${JSON.stringify(env)}`,
    );
  }
});
