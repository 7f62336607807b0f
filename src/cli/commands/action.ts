import type { CliCommand } from '../cli-command.js';

export const ACTION: CliCommand = {
  name: 'action',
  summary: 'one GitHub Actions run of the goal its event is about',
  description:
    "Runs as a step of a GitHub Actions workflow (see action.yml and examples/goal-loop-action.yml): reads the runner's environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_SERVER_URL, RUNNER_TEMP, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT) and the action's inputs (INPUT_GITHUB_TOKEN, INPUT_ANTHROPIC_API_KEY, INPUT_TRIGGER_LABEL, INPUT_CONFIG, INPUT_MAX_RUN_MINUTES…), rebuilds the goal from GitHub (its branch, status comment and PR), applies the event as the GitHub App would, and works the goal until it rests or the run's time is up; then it continues in a new run (workflow_dispatch). Keeps nothing on the runner.",
  example: 'node dist/src/cli/main.js action   # in a workflow step; see examples/goal-loop-action.yml',
  define: (cmd) => cmd,
  run: async () => (await import('../actions/action.js')).actionCommand(),
};
