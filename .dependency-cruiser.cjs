/**
 * The layering of src/ (checked by `npm run lint:deps` and test/architecture/layers.test.ts).
 *
 *   common/                      text and file helpers; imports no other folder
 *   goal/                        the goal model: spec, DAG, states, limits, results; imports common/
 *   ports/                       interfaces the loop drives; imports goal/, common/
 *   loop/                        the controller; imports goal/, ports/, common/, never an adapter
 *   config/                      the repo config (policy); imports goal/, common/
 *   steering/                    a goal steered from an issue: events, /goal commands, decide, the
 *                                turn decision, status comment, report, and the IssueForge port it
 *                                drives; imports goal/, config/, ports/, common/: no forge client
 *   adapters                     workspace/, sandbox/, agent/, ledger/, forge/: implement ports/
 *   run/, worker/                compose a goal run (local repository, queued work)
 *   github/, mcp/, demo/         wirings: the App (Probot, Octokit, the server; it implements
 *                                steering's IssueForge), the MCP server, the demo
 *   cli/                         the entry point: the only folder that imports the wirings
 *
 * Folders never form a cycle, and no module cycle exists at run time (a type-only import back
 * into a module that imports it is allowed: it is erased by the compiler).
 */
const ADAPTERS = '^src/(workspace|sandbox|agent|ledger|forge)/';
const WIRINGS = '^src/(cli|github|action|mcp|demo|run|worker)/';
/** GitHub's client libraries, resolved (node_modules/…) or not (a bare name). */
const FORGE_CLIENTS = '(^|/)node_modules/(probot|@probot/|@octokit/|octokit/)|^(probot|@probot/|@octokit/|octokit)';

module.exports = {
  forbidden: [
    {
      name: 'no-folder-circular',
      comment: 'Two folders of src/ import each other (directly or through others): move the shared thing down.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-circular',
      comment: 'A cycle of modules that are loaded at run time (type-only imports do not count).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'shared-imports-no-folder',
      comment: 'common/ is the bottom layer: it imports no other folder of src/.',
      severity: 'error',
      from: { path: '^src/common/' },
      to: { path: '^src/', pathNot: '^src/common/' },
    },
    {
      name: 'goal-imports-only-shared',
      comment: 'The goal model owns the shared words: it imports only common/.',
      severity: 'error',
      from: { path: '^src/goal/' },
      to: { path: '^src/', pathNot: '^src/(goal|common)/' },
    },
    {
      name: 'ports-import-only-goal',
      comment: 'ports/ are interfaces over the goal model: they import only goal/ and common/.',
      severity: 'error',
      from: { path: '^src/ports/' },
      to: { path: '^src/', pathNot: '^src/(ports|goal|common)/' },
    },
    {
      name: 'loop-imports-no-adapter',
      comment: 'The loop drives ports/, never an adapter or a wiring: it imports only goal/, ports/ and common/.',
      severity: 'error',
      from: { path: '^src/loop/' },
      to: { path: '^src/', pathNot: '^src/(loop|goal|ports|common)/' },
    },
    {
      name: 'steering-is-forge-neutral',
      comment:
        'steering/ is the policy every forge wires (the App, a GitHub Action, GitLab): it imports only goal/, config/, ports/ and common/, ' +
        'never Probot or Octokit, a wiring (github/, mcp/, cli/, run/, worker/), the loop or an adapter. Talk to the forge through steering/issue-forge.ts.',
      severity: 'error',
      from: { path: '^src/steering/' },
      to: {
        path: [FORGE_CLIENTS, '^src/'],
        pathNot: '^src/(steering|goal|config|ports|common)/',
      },
    },
    {
      name: 'adapters-import-no-wiring',
      comment: 'Adapters (workspace, sandbox, agent, ledger, forge) never import a wiring (cli, github, action, mcp, demo, run, worker).',
      severity: 'error',
      from: { path: ADAPTERS },
      to: { path: WIRINGS },
    },
    {
      name: 'run-and-worker-import-no-entry-wiring',
      comment: 'run/ and worker/ compose goal runs for the wirings: they never import cli/, github/ or mcp/.',
      severity: 'error',
      from: { path: '^src/(run|worker)/' },
      to: { path: '^src/(cli|github|mcp)/' },
    },
    {
      name: 'github-and-mcp-apart',
      comment: 'The App (github/) and the MCP server (mcp/) never import each other nor cli/ nor the Action.',
      severity: 'error',
      from: { path: '^src/(github|mcp)/' },
      to: { path: '^src/(cli|github|mcp|action)/', pathNot: '^src/$1/' },
    },
    {
      name: 'action-wires-the-github-adapters',
      comment: "The GitHub Action (action/) is a second wiring of the App's policy on GitHub: it uses github/'s forge, Octokit and goal turn, never cli/, mcp/ or demo/.",
      severity: 'error',
      from: { path: '^src/action/' },
      to: { path: '^src/(cli|mcp|demo)/' },
    },
    {
      name: 'only-cli-imports-wirings',
      comment: 'cli/ is the entry point: no other folder imports cli/, github/, mcp/ or demo/ (but the Action, which wires github/: see above).',
      severity: 'error',
      from: { path: '^src/([^/]+)/', pathNot: '^src/(cli|action)/' },
      to: { path: '^src/(cli|github|mcp|demo)/', pathNot: '^src/$1/' },
    },
    {
      name: 'src-imports-no-tests',
      comment: 'Shipped code never imports the tests or the benchmarks.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-unresolvable',
      comment: 'Every relative import resolves (otherwise the rules above could not see it).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true, dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: ['node_modules'] },
    // node_modules is not followed, but kept as leaves: steering-is-forge-neutral must see an import of probot.
    exclude: { path: '^dist/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
