/**
 * The refusals of a dependency change, worded once for both engines
 * (docs/decisions/0035-task-dependencies.md).
 */
import { ConflictError, InvalidInputError } from '../core/errors.js';

export function selfDependency(key: string): InvalidInputError {
  // Flag-neutral: `task depend --on` and `task add --after` both reach it, and so does the HTTP API.
  return new InvalidInputError(
    `task ${key} cannot depend on itself`,
    `name a task other than ${key} to wait for`,
  );
}

export function cycleRefusal(key: string, on: string): InvalidInputError {
  return new InvalidInputError(
    `task ${key} cannot depend on ${on}: ${on} already waits (through its dependencies) for ${key}, a cycle`,
    `see the chain with \`baton task show ${on}\`, and remove an edge with \`baton task undepend\` if it is wrong`,
  );
}

export function noSuchDependency(key: string, on: string): ConflictError {
  return new ConflictError(
    `task ${key} does not depend on ${on}`,
    `see what it waits for with \`baton task show ${key}\``,
  );
}
