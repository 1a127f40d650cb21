/**
 * How a database URL names PostgreSQL: `postgres://` or `postgresql://`, in any case. Its own
 * module so that the CLI's launcher (src/cli/launch.ts), which picks a code cache per engine before
 * any of Baton loads, reads URLs as open.ts does without importing the store.
 */
export const POSTGRES_URL = /^postgres(ql)?:\/\//i;
