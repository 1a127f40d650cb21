/**
 * node:crypto, loaded on its first use. Loading it costs a fresh process 3-5 ms of CPU, and most
 * CLI calls (a `baton claim` on SQLite) hash and sign nothing; the modules on every call's path (the
 * Coordinator's ledger keys and token cache, the store's token secrets) ask here when they need it.
 */
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';

type NodeCrypto = typeof Crypto;

let loaded: NodeCrypto | undefined;

export function nodeCrypto(): NodeCrypto {
  loaded ??= createRequire(import.meta.url)('node:crypto') as NodeCrypto;
  return loaded;
}
