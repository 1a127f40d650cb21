/**
 * The agent command is a template such as `claude -p "Work on {{key}}"`. Placeholders become
 * references to environment variables the runner sets (`{{key}}` → `${BATON_KEY}`), so a task
 * title full of quotes and semicolons is expanded by the shell as data and never parsed as code.
 */
import { InvalidInputError } from './errors.js';

export const TEMPLATE_FIELDS = {
  key: 'BATON_KEY',
  title: 'BATON_TITLE',
  session: 'BATON_SESSION',
  job: 'BATON_JOB',
  epoch: 'BATON_EPOCH',
  host: 'BATON_HOST',
  attempt: 'BATON_ATTEMPT',
  /** The reason of the task's last rejection in review, for the next run ('' when none). */
  feedback: 'BATON_FEEDBACK',
} as const;
export type TemplateField = keyof typeof TEMPLATE_FIELDS;

const PLACEHOLDER = /\{\{\s*([a-zA-Z_]+)\s*\}\}/g;

/** Checks that every placeholder names a known field; returns the template unchanged. */
export function validateCommandTemplate(template: string): string {
  for (const m of template.matchAll(PLACEHOLDER)) {
    const name = m[1] ?? '';
    if (!(name in TEMPLATE_FIELDS)) {
      throw new InvalidInputError(
        `unknown placeholder {{${name}}} in the command`,
        `use one of ${Object.keys(TEMPLATE_FIELDS)
          .map((f) => `{{${f}}}`)
          .join(', ')}`,
      );
    }
  }
  return template;
}

/** The shell text to run: placeholders replaced by environment references. */
export function renderCommand(template: string): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const variable = TEMPLATE_FIELDS[name as TemplateField];
    if (variable === undefined) throw new InvalidInputError(`unknown placeholder {{${name}}}`);
    return `\${${variable}}`;
  });
}

/** The environment that carries the values the placeholders refer to. */
export function templateEnvironment(values: Record<TemplateField, string | number>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [field, variable] of Object.entries(TEMPLATE_FIELDS)) {
    env[variable] = String(values[field as TemplateField]);
  }
  return env;
}
