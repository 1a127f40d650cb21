/**
 * A store whose network can be cut: `refuse` makes every call fail at once as unreachable (a
 * server restart); `hang` makes every call wait, unanswered, as on a blackholed connection with
 * no timeout, until `release()` fails them all.
 */
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { Store } from '../../src/store/store.js';

export interface Network {
  mode: 'up' | 'refuse' | 'hang';
  /** Fails every hanging call and brings the network back. */
  release(): void;
}

export function network(): Network {
  const hanging: (() => void)[] = [];
  const net: Network & { hanging: (() => void)[] } = {
    mode: 'up',
    hanging,
    release: () => {
      net.mode = 'up';
      for (const fail of hanging.splice(0)) fail();
    },
  };
  return net;
}

const unreachable = () => new StoreUnavailableError('cannot use the database: connection refused');

export function flaky(store: Store, net: Network): Store {
  const hanging = (net as Network & { hanging: (() => void)[] }).hanging;
  const wrapped: Record<string, unknown> = {};
  for (const [name, group] of Object.entries(store)) {
    if (typeof group !== 'object' || group === null) {
      wrapped[name] = group;
      continue;
    }
    const methods: Record<string, unknown> = {};
    for (const [method, fn] of Object.entries(group as Record<string, unknown>)) {
      methods[method] = (...args: unknown[]): Promise<unknown> => {
        if (net.mode === 'refuse') return Promise.reject(unreachable());
        if (net.mode === 'hang') return new Promise((_, reject) => hanging.push(() => reject(unreachable())));
        return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      };
    }
    wrapped[name] = methods;
  }
  return { ...(wrapped as unknown as Store), now: () => store.now(), close: () => store.close() };
}
