/** The CLI's refusals are the coordinator's (coordinator/refusals.ts), shared with the HTTP API. */
export { Refusal } from '../coordinator/refusals.js';
