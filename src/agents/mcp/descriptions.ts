/**
 * What each MCP tool tells a model: when to call it and what to do on each outcome. Reviewed as
 * prose, apart from the code that serves the tools (tools.ts).
 */
export const TOOL_DESCRIPTIONS = {
  baton_next:
    'Take the next task to work on: Baton claims the most urgent free task for you (open, behind no ' +
    'approval gate, held by no one) and returns its key, title and epoch. Call it when you have no task ' +
    'or have finished one. ok:true: you hold the task now; keep the key and epoch for baton_heartbeat, ' +
    'baton_effect and baton_release. ok:false: no task is free; stop and tell the user (the answer lists ' +
    'tasks that wait for a human approval).',
  baton_claim:
    'Claim a Baton task before you start working on it, so that no other agent or person works on it ' +
    'at the same time. Call it once, before your first change for the task. ' +
    'ok:true gives the epoch: keep the key and epoch, and pass them to baton_heartbeat, baton_effect ' +
    'and baton_release. ok:false (reason held) names who holds the task: then do not work on it; pick ' +
    'another task or tell the user who has it.',
  baton_heartbeat:
    'Check that your claim is still yours. Call it before each step that changes something outside ' +
    'your head (an edit, a commit, a push, a comment) and at least every few minutes. ok:true: carry ' +
    'on. ok:false (reason fenced): someone else holds the task now, or your claim was released; stop ' +
    'working on it at once, change nothing more for it, and tell the user. ok:false (reason wrong_epoch): ' +
    'the task is yours at another epoch; use the epoch it names.',
  baton_release:
    'Give the task back when you stop working on it, with outcome done (the work is finished), failed ' +
    '(you could not do it) or released (you stop without finishing). Call it once, at the end. A task ' +
    "Baton's runner gave you (BATON_KEY) is finished by your exit instead: released done, it stays held. " +
    'ok:false means the claim was no longer yours: there is nothing to release; stop and tell the user.',
  baton_effect:
    'Record a side effect you make for the task, as or just before you make it: an opened pull request ' +
    '(kind pr, payload {"url": ...}), a pushed commit (kind push, payload {"sha": ..., "branch": ...}), ' +
    'a comment. Baton accepts it only while your claim is current. ok:false (reason fenced): do not ' +
    'make the change; stop working on the task and tell the user.',
  baton_escalate:
    'Hand the task to a human when you cannot go on without one: a decision only they can make, missing ' +
    'access, an unclear requirement. Give the reason in a sentence. Your claim ends and the task waits ' +
    'for a human; stop working on it at once and do not release it. ok:false (reason fenced): the claim ' +
    'was no longer yours; stop and tell the user.',
  baton_status:
    'Show your Baton session: its id, whether it is live, and each claim it holds (whoever made it) ' +
    'with its epoch, or that you made and lost. Call it when unsure what you hold, such as after a ' +
    'long pause or a context reset. A claim with current:false is gone: stop working on that task.',
  baton_show_task:
    'Show a task: its title, priority, labels, who holds it (session, host, since, epoch) and its ' +
    'recent jobs. Read-only; use it to see who has a task before you ask the user about it.',
} as const;

export type ToolName = keyof typeof TOOL_DESCRIPTIONS;
