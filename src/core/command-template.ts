/**
 * The agent command is a template such as `claude -p "Work on {{key}}: {{title}}"`. A placeholder
 * becomes a quoted reference to an environment variable the runner sets: bare, `{{title}}` is
 * written `"${BATON_TITLE}"`; inside double quotes, `${BATON_TITLE}`. Either way the shell
 * expands it once, as one argument of data: no globbing (`* --version`), no word splitting
 * (`-rf` stays inside the title), no code (`$(…)`, backticks and `;` stay text).
 *
 * A placeholder is refused where that cannot hold, checked when the job is enqueued:
 * | where                                           | why                                        |
 * |-------------------------------------------------|--------------------------------------------|
 * | inside single quotes, or $'…'                   | it would stay literal                      |
 * | inside backticks or $(…)                        | a command substitution: refused outright   |
 * | inside ${…} or $((…)), or after a here-document | an expansion this scanner does not follow  |
 * | the command string of sh/bash/… -c, su -c       | that shell runs the value as code          |
 * | an argument of eval or ssh                      | both run their arguments as code           |
 * | the code of python -c, node -e, perl -e, …      | the value would become program text        |
 * An argument after the code is fine: `sh -c 'echo "$1"' sh {{title}}`. So is the environment:
 * every script the agent runs can read $BATON_TITLE itself.
 */
import { InvalidInputError } from './errors.js';
import { shellContexts, type ShellContext } from './shell-context.js';

const TEMPLATE_FIELDS = {
  key: 'BATON_KEY',
  title: 'BATON_TITLE',
  session: 'BATON_SESSION',
  job: 'BATON_JOB',
  epoch: 'BATON_EPOCH',
  host: 'BATON_HOST',
  attempt: 'BATON_ATTEMPT',
  /**
   * The latest human answer for the next run ('' when none): a rejection's reason in review, or
   * the note a person resolved the task's escalation with (core/task.ts, Task.feedback).
   */
  feedback: 'BATON_FEEDBACK',
  /** Which answer that is: `review`, `escalation`, or '' when there is no feedback. */
  feedback_from: 'BATON_FEEDBACK_FROM',
} as const;
export type TemplateField = keyof typeof TEMPLATE_FIELDS;

const PLACEHOLDER = /\{\{\s*([a-zA-Z_]+)\s*\}\}/g;

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'fish', 'su', 'runuser']);
const EVALUATORS = new Set(['eval', 'ssh']);
/** Interpreters and the flags after which their next argument is program text. */
const CODE_FLAGS: Readonly<Record<string, readonly string[]>> = {
  python: ['-c'],
  python2: ['-c'],
  python3: ['-c'],
  perl: ['-e', '-E'],
  ruby: ['-e'],
  node: ['-e', '-p', '--eval', '--print'],
  deno: ['eval'],
  php: ['-r'],
  lua: ['-e'],
  awk: [],
  osascript: ['-e'],
};

const base = (word: string): string => word.slice(word.lastIndexOf('/') + 1);
const HINT_ARGUMENT =
  'pass the value as an argument after the code (sh -c \'echo "$1"\' sh {{title}}), ' +
  'or read $BATON_TITLE and the other BATON_* variables from the environment';

/** Why a placeholder in this context would not be data; null when it is safe there. */
function unsafeBecause(context: ShellContext): string | null {
  switch (context.kind) {
    case 'single':
      return 'inside single quotes, where the shell leaves it literal';
    case 'substitution':
      return 'inside a command substitution (backticks or $(…))';
    case 'expansion':
      return 'inside ${…} or $((…))';
    case 'heredoc':
      return 'after a here-document (<<)';
    default:
      return evaluatedBy(context.words);
  }
}

/** Whether the word that follows `words` is program text for a command among them. */
function evaluatedBy(words: readonly string[]): string | null {
  for (let index = 0; index < words.length; index++) {
    const name = base(words[index] ?? '');
    const rest = words.slice(index + 1);
    if (EVALUATORS.has(name)) return `as an argument of ${name}, which runs its arguments as code`;
    if (SHELLS.has(name)) {
      const flagAt = rest.findIndex((word) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(word));
      // The command string is the first word after -c that is not an option.
      if (flagAt !== -1 && rest.slice(flagAt + 1).every((word) => word.startsWith('-'))) {
        return `as the command string of ${name} ${rest[flagAt] ?? '-c'}, which runs it as code`;
      }
    }
    const flags = Object.hasOwn(CODE_FLAGS, name) ? CODE_FLAGS[name] : undefined;
    if (name === 'awk' && rest.every((word) => word.startsWith('-'))) return 'as the program text of awk';
    // After a script (a word naming a file: a slash or a dot in it), the interpreter's flags end:
    // `node cli.js -p {{key}}` hands the value to cli.js, while `node -p {{key}}` evaluates it.
    const script = rest.slice(0, -1).some((word) => !word.startsWith('-') && /[/.]/.test(word));
    if (flags !== undefined && !script && flags.includes(rest[rest.length - 1] ?? '')) {
      return `as the program text of ${name} ${rest[rest.length - 1] ?? ''}`;
    }
  }
  return null;
}

interface Placeholder {
  readonly field: TemplateField;
  readonly index: number;
  readonly length: number;
  readonly context: ShellContext;
}

/** Every placeholder with its context; throws on an unknown name or an unsafe position. */
function placeholders(template: string): Placeholder[] {
  const found = [...template.matchAll(PLACEHOLDER)];
  const contexts = shellContexts(
    template,
    found.map((match) => match.index),
  );
  return found.map((match, index) => {
    const name = match[1] ?? '';
    if (!Object.hasOwn(TEMPLATE_FIELDS, name)) {
      throw new InvalidInputError(
        `unknown placeholder {{${name}}} in the command`,
        `use one of ${Object.keys(TEMPLATE_FIELDS)
          .map((field) => `{{${field}}}`)
          .join(', ')}`,
      );
    }
    const context = contexts[index] ?? { kind: 'substitution' };
    const why = unsafeBecause(context);
    if (why !== null) {
      throw new InvalidInputError(
        `{{${name}}} at position ${match.index} of the command stands ${why}`,
        HINT_ARGUMENT,
      );
    }
    return { field: name as TemplateField, index: match.index, length: match[0].length, context };
  });
}

/** Checks every placeholder: a known name, in a place where it stays data. Returns the template. */
export function validateCommandTemplate(template: string): string {
  placeholders(template);
  return template;
}

/** The shell text to run: each placeholder replaced by a quoted environment reference. */
export function renderCommand(template: string): string {
  let out = '';
  let at = 0;
  for (const placeholder of placeholders(template)) {
    const ref = `\${${TEMPLATE_FIELDS[placeholder.field]}}`;
    out += template.slice(at, placeholder.index) + (placeholder.context.kind === 'double' ? ref : `"${ref}"`);
    at = placeholder.index + placeholder.length;
  }
  return out + template.slice(at);
}

/** The environment that carries the values the placeholders refer to. */
export function templateEnvironment(values: Record<TemplateField, string | number>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [field, variable] of Object.entries(TEMPLATE_FIELDS)) {
    env[variable] = String(values[field as TemplateField]);
  }
  return env;
}
