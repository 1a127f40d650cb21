/** One call's own answer inside a batch: its value, or the error it alone throws. */
export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** Settles a call's promise from its outcome. */
export function settle<T>(
  outcome: Outcome<T> | undefined,
  resolve: (value: T) => void,
  reject: (error: unknown) => void,
): void {
  if (outcome?.ok === true) resolve(outcome.value);
  else
    reject(
      outcome === undefined ? new Error('invariant broken: a batch answered fewer calls') : outcome.error,
    );
}
