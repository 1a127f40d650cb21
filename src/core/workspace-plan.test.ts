/** The workspace decision table, row by row, and the coding-role safety net. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkspaceConfigurationError } from './errors.js';
import {
  isCodingRole,
  resolveWorkspacePlan,
  type Agent,
  type Project,
  type Workspace,
  type WorkspacePlanInput,
} from './workspace-plan.js';

const TASK_WS: Workspace = { name: 'pr-branch', path: '/srv/pr-branch', kind: 'worktree' };
const AGENT_WS: Workspace = { name: 'ada-desk', path: '/srv/ada', kind: 'dir' };
const PRIMARY: Workspace = { name: 'api-main', path: '/srv/api', kind: 'worktree' };
const UNRELATED: Workspace = { name: 'somebody-else', path: '/srv/else', kind: 'dir' };
const ALL = [TASK_WS, AGENT_WS, PRIMARY, UNRELATED];

const engineer = (over: Partial<Agent> = {}): Agent => ({
  name: 'ada',
  role: 'Engineer',
  department: null,
  workspace: AGENT_WS.name,
  ...over,
});
const writer = (over: Partial<Agent> = {}): Agent => ({
  name: 'wes',
  role: 'Writer',
  department: 'marketing',
  workspace: AGENT_WS.name,
  ...over,
});
const project = (primaryWorkspace: string | null): Project => ({ name: 'api', primaryWorkspace });

function input(over: {
  requiresFilesystem?: boolean;
  workspace?: string | null;
  agent?: Agent | null;
  project?: Project | null;
}): WorkspacePlanInput {
  return {
    task: {
      key: 'github:acme/api#7',
      requiresFilesystem: over.requiresFilesystem ?? false,
      workspace: over.workspace ?? null,
    },
    agent: over.agent === undefined ? null : over.agent,
    project: over.project === undefined ? null : over.project,
    workspaces: ALL,
  };
}

const exclusiveOn = (workspace: Workspace) => ({ lockMode: 'exclusive', workspace });
const NONE = { lockMode: 'none', workspace: null };

describe('resolveWorkspacePlan: an explicit task workspace', () => {
  test('locks the task workspace exclusively, whatever the other signals say', () => {
    const cases = [
      input({ workspace: TASK_WS.name }),
      input({ workspace: TASK_WS.name, agent: writer(), project: project(PRIMARY.name) }),
      input({
        workspace: TASK_WS.name,
        requiresFilesystem: true,
        agent: engineer(),
        project: project(PRIMARY.name),
      }),
    ];
    for (const c of cases) assert.deepEqual(resolveWorkspacePlan(c), exclusiveOn(TASK_WS));
  });
});

describe('resolveWorkspacePlan: a task that requires the filesystem', () => {
  test("locks the agent's workspace first", () => {
    const c = input({ requiresFilesystem: true, agent: writer(), project: project(PRIMARY.name) });
    assert.deepEqual(resolveWorkspacePlan(c), exclusiveOn(AGENT_WS));
  });

  test("locks the project's primary workspace when the agent has none, or there is no agent", () => {
    const agent = writer({ workspace: null });
    const withAgent = input({ requiresFilesystem: true, agent, project: project(PRIMARY.name) });
    assert.deepEqual(resolveWorkspacePlan(withAgent), exclusiveOn(PRIMARY));
    const alone = input({ requiresFilesystem: true, project: project(PRIMARY.name) });
    assert.deepEqual(resolveWorkspacePlan(alone), exclusiveOn(PRIMARY));
  });

  test('throws WorkspaceConfigurationError with cause and fix when nothing is bound', () => {
    const unbound = input({
      requiresFilesystem: true,
      agent: writer({ workspace: null }),
      project: project(null),
    });
    assert.throws(
      () => resolveWorkspacePlan(unbound),
      (error: unknown) => {
        assert.ok(error instanceof WorkspaceConfigurationError);
        assert.equal(error.code, 'workspace_unresolved');
        assert.equal(error.key, 'github:acme/api#7');
        assert.equal(error.agent, 'wes');
        assert.equal(error.project, 'api');
        assert.equal(
          error.message,
          'task github:acme/api#7 needs an exclusive workspace lock (it requires the filesystem) but no ' +
            'workspace can be resolved: the task names no workspace, agent wes has no workspace, ' +
            'project api has no primary workspace',
        );
        assert.equal(
          error.hint,
          'bind a workspace to the task with `baton task set github:acme/api#7 --workspace <w>` ' +
            '(register it first with `baton workspace add <w> --path <dir>`), ' +
            'or give agent wes a workspace, or give project api a primary workspace; ' +
            'if the task changes no files, run `baton task set github:acme/api#7 --no-requires-filesystem`',
        );
        return true;
      },
    );
  });

  test('says when there was no agent and no registered project to look at', () => {
    assert.throws(
      () => resolveWorkspacePlan(input({ requiresFilesystem: true })),
      (error: unknown) => {
        assert.ok(error instanceof WorkspaceConfigurationError);
        assert.match(error.message, /no agent was given, the task is in no registered project$/);
        assert.match(
          error.hint ?? '',
          /or give the agent that runs it a workspace, or give its project a primary/,
        );
        return true;
      },
    );
  });
});

describe('resolveWorkspacePlan: an agent with a coding role', () => {
  test("locks the agent's workspace even when the task does not require the filesystem", () => {
    for (const role of ['CTO', 'Senior Engineer', 'frontend developer', 'DevOps', 'sre']) {
      const plan = resolveWorkspacePlan(input({ agent: engineer({ role }), project: project(PRIMARY.name) }));
      assert.deepEqual(plan, exclusiveOn(AGENT_WS), role);
    }
  });

  test("falls back to the project's primary workspace, and to nothing else", () => {
    const plan = resolveWorkspacePlan(
      input({ agent: engineer({ workspace: null }), project: project(PRIMARY.name) }),
    );
    assert.deepEqual(plan, exclusiveOn(PRIMARY));
  });

  test('counts the engineering department as a coding role', () => {
    const manager = engineer({ role: 'manager', department: 'ENGINEERING' });
    assert.deepEqual(resolveWorkspacePlan(input({ agent: manager })), exclusiveOn(AGENT_WS));
  });

  test('throws naming the coding role when neither agent nor project has a workspace', () => {
    const unbound = input({ agent: engineer({ role: 'CTO', workspace: null }), project: project(null) });
    assert.throws(
      () => resolveWorkspacePlan(unbound),
      (error: unknown) => {
        assert.ok(error instanceof WorkspaceConfigurationError);
        assert.match(error.message, /\(agent ada has the coding role "CTO"\)/);
        assert.doesNotMatch(error.hint ?? '', /--no-requires-filesystem/);
        return true;
      },
    );
    const both = input({ requiresFilesystem: true, agent: engineer({ workspace: null }) });
    assert.throws(
      () => resolveWorkspacePlan(both),
      /\(it requires the filesystem and agent ada has the coding role/,
    );
  });
});

describe('resolveWorkspacePlan: everything else', () => {
  test('runs cognitive work with lock mode none and no workspace, even when workspaces are bound', () => {
    const cases = [
      input({}),
      input({ agent: writer() }),
      input({ agent: writer(), project: project(PRIMARY.name) }),
      input({ agent: writer({ role: 'CFO', department: 'finance' }), project: project(PRIMARY.name) }),
    ];
    for (const c of cases) assert.deepEqual(resolveWorkspacePlan(c), NONE);
  });

  test('never falls back to some other workspace that happens to exist', () => {
    const only = { ...input({ requiresFilesystem: true }), workspaces: [UNRELATED] };
    assert.throws(() => resolveWorkspacePlan(only), WorkspaceConfigurationError);
  });

  test('treats a binding to a workspace it was not given as a broken invariant', () => {
    const missing = { ...input({ workspace: TASK_WS.name }), workspaces: [] };
    assert.throws(() => resolveWorkspacePlan(missing), /invariant broken: workspace pr-branch/);
  });
});

describe('isCodingRole', () => {
  test('matches the coding-role pattern anywhere in the role, in any case', () => {
    for (const role of ['cto', 'CTO', 'Staff Engineer', 'engineering lead', 'Developer', 'devops', 'SRE']) {
      assert.equal(isCodingRole({ role, department: null }), true, role);
    }
  });

  test('matches the engineering department in any case, and only that department', () => {
    assert.equal(isCodingRole({ role: 'manager', department: 'Engineering' }), true);
    assert.equal(isCodingRole({ role: 'manager', department: 'engineering ops' }), false);
    assert.equal(isCodingRole({ role: 'manager', department: null }), false);
  });

  test('leaves other roles cognitive', () => {
    for (const role of ['CFO', 'writer', 'designer', 'product manager', 'legal']) {
      assert.equal(isCodingRole({ role, department: 'business' }), false, role);
    }
  });
});
