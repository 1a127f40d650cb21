import { sqliteDatabase } from '../../../test/support/databases.js';
import { harnessFor } from '../../../test/support/harness.js';
import { exerciseStore } from '../conformance/index.js';

exerciseStore(harnessFor(sqliteDatabase()));
