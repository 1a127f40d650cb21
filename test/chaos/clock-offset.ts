/**
 * Preload (`node --import clock-offset.js`): shifts this process's wall clock by
 * CHAOS_CLOCK_OFFSET_MS. Baton must not care: every ownership decision is judged on the
 * database clock, and local deadlines use the monotonic clock.
 */
const offset = Number(process.env['CHAOS_CLOCK_OFFSET_MS'] ?? '0');
if (Number.isFinite(offset) && offset !== 0) {
  const realNow = Date.now.bind(Date);
  const RealDate = Date;
  Date.now = () => realNow() + offset;
  // `new Date()` without arguments reads the shifted clock too.
  globalThis.Date = new Proxy(RealDate, {
    construct(target, args: unknown[]) {
      return args.length === 0 ? new target(realNow() + offset) : new target(...(args as [string]));
    },
  });
}
export {};
