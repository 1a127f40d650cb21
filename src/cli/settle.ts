/** The last start-up line of `baton up` (commands/up.ts): said once the log has been quiet a moment. */
/** Calls `say` once: QUIET_MS after the last bump, or MAX_MS after the first; never after drop. */
export function settle(say: () => void): { bump: () => void; now: () => void; drop: () => void } {
  const QUIET_MS = 300;
  const MAX_MS = 3000;
  let done = false;
  let quiet: NodeJS.Timeout | undefined;
  let limit: NodeJS.Timeout | undefined;
  const drop = (): void => {
    done = true;
    clearTimeout(quiet);
    clearTimeout(limit);
  };
  const fire = (): void => {
    if (done) return;
    drop();
    say();
  };
  return {
    bump: () => {
      if (done) return;
      clearTimeout(quiet);
      quiet = setTimeout(fire, QUIET_MS);
      limit ??= setTimeout(fire, MAX_MS);
    },
    now: fire,
    drop,
  };
}
