/**
 * The plan's invariant as a compile-time test: `npm run lint` (tsc) fails when the type lets a
 * caller read a workspace in the `none` branch, or lets a plan pair the wrong workspace with a
 * lock mode. Each `@ts-expect-error` below must stay an error, or tsc reports it unused. The
 * runtime test only proves the file was compiled and ran.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Workspace, WorkspacePlan } from './workspace-plan.js';

/** true when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

export type ExclusiveCarriesAWorkspace = Expect<
  Equal<Extract<WorkspacePlan, { lockMode: 'exclusive' }>['workspace'], Workspace>
>;
export type NoneCarriesNull = Expect<Equal<Extract<WorkspacePlan, { lockMode: 'none' }>['workspace'], null>>;
export type TwoModesOnly = Expect<Equal<WorkspacePlan['lockMode'], 'exclusive' | 'none'>>;

const ws: Workspace = { name: 'w', path: '/w', kind: 'dir' };

/** Reads the workspace name the only way the type allows: in the exclusive branch. */
export function lockedName(plan: WorkspacePlan): string | null {
  if (plan.lockMode === 'none') return null;
  return plan.workspace.name;
}

/** Never called: in the none branch there is no workspace to read. */
export function readNone(plan: WorkspacePlan): string {
  if (plan.lockMode === 'none') {
    // @ts-expect-error the none branch's workspace is null
    void plan.workspace.name;
    return '';
  }
  return plan.workspace.name;
}

/** Never called: without narrowing, the workspace may be null. */
export function unnarrowed(plan: WorkspacePlan): string {
  // @ts-expect-error the plan may be `none`, whose workspace is null
  return plan.workspace.name;
}

export const impossible: readonly WorkspacePlan[] = [
  // @ts-expect-error exclusive without a workspace
  { lockMode: 'exclusive', workspace: null },
  // @ts-expect-error none with a workspace
  { lockMode: 'none', workspace: ws },
];

test('the plan type pairs exclusive with a workspace and none with null (checked by tsc)', () => {
  assert.equal(lockedName({ lockMode: 'exclusive', workspace: ws }), 'w');
  assert.equal(lockedName({ lockMode: 'none', workspace: null }), null);
});
