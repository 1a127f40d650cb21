import kernel from './0001-kernel.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Applied in order, each once, inside one BEGIN IMMEDIATE with the version check. */
export const MIGRATIONS: readonly Migration[] = [kernel];
