/**
 * Whose issues Baton imports (decision 0013, "Whose text the agent is given"). GitHub says how an
 * issue's author is associated with the repository (`author_association`: OWNER, MEMBER,
 * COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN, NONE). By default only
 * OWNER, MEMBER and COLLABORATOR issues become tasks: on a public repository anyone may file one,
 * and its text is what the agent is told. `--github-authors` widens it.
 *
 * Only the author and people with write (or triage) access may edit an issue, so an issue of a
 * trusted author is only ever edited by someone trusted; one of anyone else may be edited by its
 * author after a maintainer queued it. Such an edit gates the task (apply.ts).
 */
import { InvalidInputError } from '../core/errors.js';

const AUTHOR_ASSOCIATIONS = [
  'OWNER',
  'MEMBER',
  'COLLABORATOR',
  'CONTRIBUTOR',
  'FIRST_TIME_CONTRIBUTOR',
  'FIRST_TIMER',
  'MANNEQUIN',
  'NONE',
] as const;

/** The authors whose issues are imported, and whose edits need no second look. */
export const MEMBERS: ReadonlySet<string> = new Set(['OWNER', 'MEMBER', 'COLLABORATOR']);

/**
 * `--github-authors`: `members` (the default), `any`, or a comma-separated list of associations
 * (`members` may stand in it for its three), case-insensitive.
 */
export function parseAuthors(value: string | undefined): ReadonlySet<string> {
  if (value === undefined) return MEMBERS;
  const out = new Set<string>();
  for (const part of value.split(',').map((entry) => entry.trim().toUpperCase())) {
    if (part === 'MEMBERS') MEMBERS.forEach((entry) => out.add(entry));
    else if (part === 'ANY') AUTHOR_ASSOCIATIONS.forEach((entry) => out.add(entry));
    else if ((AUTHOR_ASSOCIATIONS as readonly string[]).includes(part)) out.add(part);
    else
      throw new InvalidInputError(
        `--github-authors ${JSON.stringify(value)}: ${JSON.stringify(part)} is not one of GitHub's author associations`,
        `give members (the default), any, or a list of ${AUTHOR_ASSOCIATIONS.join(', ')} (such as members,CONTRIBUTOR)`,
      );
  }
  return out;
}

/** Whether an issue of this author association is imported (`null`: GitHub did not say; not trusted). */
export function authorTrusted(association: string | null, authors: ReadonlySet<string>): boolean {
  return association !== null && authors.has(association.toUpperCase());
}
