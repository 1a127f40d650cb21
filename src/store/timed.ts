/**
 * A Store that times its calls: every method of every group (`jobs.claimNext`, `claims.acquire`,
 * …) and `now`, reported to an observer with its duration and whether it threw. The store's
 * behaviour is unchanged; /metrics turns the reports into a histogram (http/metrics.ts).
 * `wakeups` is passed through: waiting for a wake-up is idle time, not a store call.
 */
import type { Store } from './store.js';

export type StoreCallObserver = (method: string, seconds: number, failed: boolean) => void;

const UNTIMED = new Set(['wakeups', 'engine', 'capabilities', 'close']);

function timed<F extends (...args: never[]) => unknown>(
  name: string,
  call: F,
  observe: StoreCallObserver,
): F {
  return ((...args: Parameters<F>) => {
    const start = process.hrtime.bigint();
    const done = (failed: boolean): void =>
      observe(name, Number(process.hrtime.bigint() - start) / 1e9, failed);
    try {
      const result = call(...args);
      if (result instanceof Promise) {
        return result.then(
          (value: unknown) => {
            done(false);
            return value;
          },
          (error: unknown) => {
            done(true);
            throw error;
          },
        );
      }
      done(false);
      return result;
    } catch (error) {
      done(true);
      throw error;
    }
  }) as F;
}

export function timedStore(store: Store, observe: StoreCallObserver): Store {
  const groups = new Map<string, object>();
  const wrapGroup = (name: string, group: object): object => {
    const known = groups.get(name);
    if (known !== undefined) return known;
    const methods = new Map<string, unknown>();
    const wrapped = new Proxy(group, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        if (typeof value !== 'function' || typeof key !== 'string') return value;
        let method = methods.get(key);
        if (method === undefined) {
          method = timed(`${name}.${key}`, (value as (...args: never[]) => unknown).bind(target), observe);
          methods.set(key, method);
        }
        return method;
      },
    });
    groups.set(name, wrapped);
    return wrapped;
  };
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof key !== 'string' || UNTIMED.has(key)) return value;
      if (typeof value === 'function')
        return timed(key, (value as (...args: never[]) => unknown).bind(target), observe);
      if (typeof value === 'object' && value !== null) return wrapGroup(key, value);
      return value;
    },
  });
}
