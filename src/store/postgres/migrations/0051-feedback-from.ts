/**
 * Which human answer a task's feedback is (docs/decisions/0062-a-resolve-note-reaches-the-next-run.md):
 * `review` for a rejection's reason, `escalation` for the note `baton resolve` answered an
 * escalation with. The next run reads it as BATON_FEEDBACK_FROM beside BATON_FEEDBACK. It is read
 * only while `feedback` is set (a task reaching done clears the feedback and leaves this as it was),
 * so the hot path's finish writes `feedback` alone. Rows from before read `review`: until now only
 * a rejection set the feedback.
 */
export default {
  version: 51,
  name: 'feedback-from',
  sql: `
ALTER TABLE tasks ADD COLUMN feedback_from TEXT NOT NULL DEFAULT 'review'
  CHECK (feedback_from IN ('review', 'escalation'));
`,
};
