/** The allowlist an agent's environment is built from. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidInputError } from '../core/errors.js';
import { agentEnvironment, validateAgentEnvName } from './agent-env.js';

describe("an agent's environment", () => {
  const parent = {
    PATH: '/usr/bin',
    HOME: '/home/runner',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    BATON_DB: 'postgres://baton:hunter2@db/baton',
    BATON_TOKEN: 'operator-token',
    BATON_URL: 'http://127.0.0.1:7070',
    BATON_LEDGER_KEY: '/etc/baton/ledger.key',
    BATON_KEY: 'k0',
    AWS_SECRET_ACCESS_KEY: 'aws',
    GITHUB_TOKEN: 'ghp',
    ANTHROPIC_API_KEY: 'sk',
    ANTHROPIC_MODEL: 'opus',
    SSH_AUTH_SOCK: '/tmp/agent.sock',
  };

  test('passes PATH, HOME, the locale and BATON_*, and nothing else unless allowed', () => {
    const env = agentEnvironment(parent, [], {});
    assert.deepEqual(Object.keys(env).sort(), ['BATON_DB', 'BATON_KEY', 'HOME', 'LANG', 'LC_ALL', 'PATH']);
  });

  test("never inherits the runner's token, API or ledger key, unless named exactly", () => {
    const env = agentEnvironment(parent, ['BATON_*'], {});
    for (const name of ['BATON_TOKEN', 'BATON_URL', 'BATON_LEDGER_KEY'])
      assert.equal(env[name], undefined, name);
    assert.equal(agentEnvironment(parent, ['BATON_URL'], {})['BATON_URL'], 'http://127.0.0.1:7070');
    const own = agentEnvironment(parent, [], { BATON_TOKEN: 'agent-own' });
    assert.equal(own['BATON_TOKEN'], 'agent-own', "the runner's values for the agent still go in");
  });

  test('passes the names and NAME* prefixes the operator allows', () => {
    const env = agentEnvironment(parent, ['ANTHROPIC_*', 'SSH_AUTH_SOCK'], {});
    assert.equal(env['ANTHROPIC_API_KEY'], 'sk');
    assert.equal(env['ANTHROPIC_MODEL'], 'opus');
    assert.equal(env['SSH_AUTH_SOCK'], '/tmp/agent.sock');
    assert.equal(env['GITHUB_TOKEN'], undefined);
  });

  test("sets the runner's own values over what it inherits", () => {
    const env = agentEnvironment(parent, [], { BATON_DB: 'postgres://baton@db/baton', BATON_KEY: 'k' });
    assert.equal(env['BATON_DB'], 'postgres://baton@db/baton');
    assert.equal(env['BATON_KEY'], 'k');
  });

  test('refuses an --agent-env that is not a variable name or prefix', () => {
    for (const bad of ['A B', '*', 'X=1', '1ABC', 'A*B']) {
      assert.throws(() => validateAgentEnvName(bad), InvalidInputError, bad);
    }
    assert.equal(validateAgentEnvName('ANTHROPIC_*'), 'ANTHROPIC_*');
  });
});
