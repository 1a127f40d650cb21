import { postgresDatabase, postgresServers } from '../../../test/support/databases.js';
import { harnessFor } from '../../../test/support/harness.js';
import { exerciseStore } from '../conformance/index.js';

// Every PostgreSQL server the test runner provides: the throwaway one, and in CI the machine's too.
for (const server of postgresServers()) exerciseStore(harnessFor(postgresDatabase(server)));
