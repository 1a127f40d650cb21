/** Broken invariants crash loudly: they are bugs, not outcomes. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`invariant broken: ${message}`);
}

export function assertNever(value: never): never {
  throw new Error(`invariant broken: unexpected value ${JSON.stringify(value)}`);
}
