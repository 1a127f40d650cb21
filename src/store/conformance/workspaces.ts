import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { givenTask, withFixture, type Harness } from './harness.js';
import { exerciseWorkspaceLocks } from './workspace-locks.js';

/** Workspaces, agents, projects, task requirements, and (in workspace-locks.ts) locks. */
export function exerciseWorkspaces(harness: Harness): void {
  describe('workspaces, agents and projects', () => {
    test('registers a workspace, an agent bound to it and a project using it, and reads them back', () =>
      withFixture(harness, async ({ store }) => {
        const ws = await store.workspaces.add({ name: 'api', path: '/srv/api', kind: 'worktree' });
        assert.deepEqual(ws, { name: 'api', path: '/srv/api', kind: 'worktree' });
        const agent = await store.agents.add({
          name: 'ada',
          role: 'CTO',
          department: 'Engineering',
          workspace: 'api',
        });
        assert.deepEqual(agent, { name: 'ada', role: 'CTO', department: 'Engineering', workspace: 'api' });
        const bare = await store.agents.add({ name: 'cfo', role: 'finance' });
        assert.deepEqual(bare, { name: 'cfo', role: 'finance', department: null, workspace: null });
        const project = await store.projects.add({ name: 'acme', primaryWorkspace: 'api' });
        assert.deepEqual(project, { name: 'acme', primaryWorkspace: 'api' });
        assert.deepEqual(await store.projects.add({ name: 'docs' }), {
          name: 'docs',
          primaryWorkspace: null,
        });
        assert.deepEqual(await store.workspaces.get('api'), ws);
        assert.deepEqual(await store.agents.get('ada'), agent);
        assert.deepEqual(await store.projects.get('acme'), project);
        assert.equal(await store.workspaces.get('nope'), null);
        assert.equal(await store.agents.get('nope'), null);
        assert.equal(await store.projects.get('nope'), null);
      }));

    test('lists workspaces, agents and projects by name', () =>
      withFixture(harness, async ({ store }) => {
        for (const name of ['b', 'a', 'c']) {
          await store.workspaces.add({ name, path: `/w/${name}`, kind: 'dir' });
          await store.agents.add({ name, role: 'engineer', workspace: name });
          await store.projects.add({ name, primaryWorkspace: name });
        }
        assert.deepEqual(
          (await store.workspaces.list()).map((workspace) => workspace.name),
          ['a', 'b', 'c'],
        );
        assert.deepEqual(
          (await store.agents.list()).map((agent) => agent.name),
          ['a', 'b', 'c'],
        );
        assert.deepEqual(
          (await store.projects.list()).map((project) => project.name),
          ['a', 'b', 'c'],
        );
      }));

    test('refuses a taken workspace, agent or project name and keeps the first', () =>
      withFixture(harness, async ({ store }) => {
        await store.workspaces.add({ name: 'w', path: '/one', kind: 'dir' });
        await store.agents.add({ name: 'a', role: 'writer' });
        await store.projects.add({ name: 'p' });
        const entries = (await store.audit.list()).length;
        await assert.rejects(
          store.workspaces.add({ name: 'w', path: '/two', kind: 'worktree' }),
          ConflictError,
        );
        await assert.rejects(
          store.agents.add({ name: 'a', role: 'engineer', workspace: 'w' }),
          ConflictError,
        );
        await assert.rejects(store.projects.add({ name: 'p', primaryWorkspace: 'w' }), ConflictError);
        assert.equal((await store.workspaces.get('w'))?.path, '/one');
        assert.equal((await store.agents.get('a'))?.role, 'writer');
        assert.equal((await store.projects.get('p'))?.primaryWorkspace, null);
        assert.equal((await store.audit.list()).length, entries);
      }));

    test('refuses an agent or project bound to an unknown workspace and writes nothing', () =>
      withFixture(harness, async ({ store }) => {
        await assert.rejects(
          store.agents.add({ name: 'a', role: 'engineer', workspace: 'nope' }),
          NotFoundError,
        );
        await assert.rejects(store.projects.add({ name: 'p', primaryWorkspace: 'nope' }), NotFoundError);
        assert.deepEqual(await store.agents.list(), []);
        assert.deepEqual(await store.projects.list(), []);
        assert.deepEqual(await store.audit.list(), []);
      }));

    test('audits each registration with what was registered', () =>
      withFixture(harness, async ({ store }) => {
        await store.workspaces.add({ name: 'w', path: '/w', kind: 'dir' });
        await store.agents.add({ name: 'a', role: 'sre', department: 'ops', workspace: 'w' });
        await store.projects.add({ name: 'p', primaryWorkspace: 'w' });
        const entries = await store.audit.list();
        assert.deepEqual(
          entries.map((entry) => [entry.type, entry.detail]),
          [
            ['workspace:added', { name: 'w', path: '/w', kind: 'dir' }],
            ['agent:added', { name: 'a', role: 'sre', department: 'ops', workspace: 'w' }],
            ['project:added', { name: 'p', primaryWorkspace: 'w' }],
          ],
        );
      }));
  });

  describe('task requirements', () => {
    test('gives a new task no filesystem requirement and no workspace', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 't');
        assert.deepEqual(await store.workspaceTasks.get('t'), {
          key: 't',
          requiresFilesystem: false,
          workspace: null,
        });
        assert.equal(await store.workspaceTasks.get('nope'), null);
      }));

    test('sets and clears a task requirement and its workspace, auditing each change', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 't');
        await store.workspaces.add({ name: 'w', path: '/w', kind: 'dir' });
        const set = await store.workspaceTasks.setRequirements({
          key: 't',
          requiresFilesystem: true,
          workspace: 'w',
        });
        assert.deepEqual(set, { key: 't', requiresFilesystem: true, workspace: 'w' });
        assert.deepEqual(await store.workspaceTasks.get('t'), set);
        await store.workspaceTasks.setRequirements({ key: 't', requiresFilesystem: false, workspace: null });
        assert.deepEqual(await store.workspaceTasks.get('t'), {
          key: 't',
          requiresFilesystem: false,
          workspace: null,
        });
        const entries = await store.audit.list({ key: 't', type: 'task:requirements-set' });
        assert.deepEqual(
          entries.map((entry) => entry.detail),
          [
            { requiresFilesystem: true, workspace: 'w' },
            { requiresFilesystem: false, workspace: null },
          ],
        );
      }));

    test('refuses requirements for an unknown task or workspace and changes nothing', () =>
      withFixture(harness, async ({ store }) => {
        await givenTask(store, 't');
        const entries = (await store.audit.list()).length;
        await assert.rejects(
          store.workspaceTasks.setRequirements({ key: 'nope', requiresFilesystem: true, workspace: null }),
          NotFoundError,
        );
        await assert.rejects(
          store.workspaceTasks.setRequirements({ key: 't', requiresFilesystem: true, workspace: 'nope' }),
          NotFoundError,
        );
        assert.deepEqual(await store.workspaceTasks.get('t'), {
          key: 't',
          requiresFilesystem: false,
          workspace: null,
        });
        assert.equal((await store.audit.list()).length, entries);
      }));
  });

  exerciseWorkspaceLocks(harness);
}
