/** What GitHub's answers about one issue end in, beyond GithubUnavailableError (api.ts makes them). */
import { GithubUnavailableError } from '../core/errors.js';

/**
 * GitHub answered 410 Gone: the issue was deleted (GitHub answers 404, not 410, when the token
 * cannot read the repository it went to, so a 404 stays "unavailable" and is retried).
 */
export class IssueGoneError extends GithubUnavailableError {
  constructor(message: string) {
    super(message, 'nothing to do: Baton closes the task of a deleted issue');
  }
}

/**
 * GitHub answered 404: no such issue, or none the token may read. Unavailable as any failure (the
 * projector retries it); a merged pull request's reference to it is passed over (webhook.ts).
 */
export class GithubNotFoundError extends GithubUnavailableError {}
