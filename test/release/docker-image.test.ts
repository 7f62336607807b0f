import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { execForm, parseCopy, parseDockerfile, parseEnv, type Stage } from '../helpers/dockerfile.js';
import { tempDir } from '../helpers/temp.js';

/**
 * There is no Docker engine here (nor a way to pull node:24-bookworm-slim), so the image is
 * rebuilt the next strongest way: its build stage's COPY lines copy exactly their files from
 * the repository into an empty folder, which then runs the stage's RUN commands; its runtime
 * stage's COPY lines make the image's /app from that, and its ENTRYPOINT runs there. What is not
 * repeated: apt-get (this machine has the packages) and the npm steps that install or prune
 * node_modules (the repository's own are used: the build stage's all of them, the runtime's only
 * the production ones, as `npm prune --omit=dev` leaves them).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const IMAGE_APP = '/app';

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { cwd, env, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

function run(argv: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { cwd, env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A path inside the image, moved to where this test keeps that folder. */
function hostPath(path: string, mounts: Record<string, string>): string {
  for (const [inImage, onHost] of Object.entries(mounts)) {
    if (path === inImage || path.startsWith(`${inImage}/`)) return onHost + path.slice(inImage.length);
  }
  return path;
}

/** COPY's destination rule: into a folder when it ends with / or there are several sources. */
function copyInto(sources: string[], fromDir: string, dest: string, toDir: string): void {
  const target = join(toDir, dest);
  const intoDir = dest.endsWith('/') || sources.length > 1;
  for (const source of sources) {
    const from = join(fromDir, source);
    if (!existsSync(from)) throw new Error(`COPY ${source}: not in the ${fromDir === ROOT ? 'repository' : 'build stage'} (docker build stops here)`);
    const to = intoDir ? join(target, basename(source)) : target;
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to, { recursive: true, dereference: false });
  }
}

/** node_modules as `npm prune --omit=dev` leaves it: a link to each production package of the lockfile. */
function productionModules(into: string): void {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const real = realpathSync(join(ROOT, 'node_modules'));
  for (const [key, entry] of Object.entries(lock.packages)) {
    const name = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key)?.[1];
    if (!name || entry.dev) continue;
    mkdirSync(dirname(join(into, name)), { recursive: true });
    symlinkSync(join(real, name), join(into, name));
  }
}

/** A RUN of the build stage, step by step (`a && b`). */
async function runBuildStep(command: string, app: string): Promise<void> {
  if (/^apt-get\b/.test(command)) return; // system packages: this machine has them
  for (const step of command.split('&&').map((s) => s.trim())) {
    if (/^npm (ci|install|rebuild|prune)\b/.test(step)) continue; // node_modules: the repository's
    if (step.includes('node_modules')) throw new Error(`RUN ${step}: changes node_modules, which this test shares with the repository; teach the test this step`);
    const r = await sh(step, app);
    if (r.code !== 0) throw new Error(`the image's build stage fails at RUN ${step} (exit ${r.code}):\n${r.output}`);
  }
}

function stageNamed(stages: Stage[], name: string): Stage {
  const stage = stages.find((s) => s.name === name);
  if (!stage) throw new Error(`no stage "${name}" in the Dockerfile`);
  return stage;
}

describe("the Docker image, rebuilt from exactly the Dockerfile's file set", () => {
  it('compiles in its build stage, ships only dist/src, and its entrypoint answers --version, --help, plan and status', { timeout: 240_000 }, async () => {
    const stages = parseDockerfile(join(ROOT, 'Dockerfile'));
    const build = stageNamed(stages, 'build');
    const runtime = stages.at(-1)!;
    expect(runtime).not.toBe(build);

    // The build stage: only what its COPY lines bring, then its RUN commands.
    const app = await tempDir('goal-loop-image-build-');
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(app, 'node_modules'));
    for (const { keyword, args } of build.instructions) {
      if (keyword === 'WORKDIR') expect(args).toBe(IMAGE_APP);
      else if (keyword === 'COPY') {
        const copy = parseCopy(args);
        expect(copy.from).toBeUndefined();
        copyInto(copy.sources, ROOT, copy.dest, app);
      } else if (keyword === 'RUN') await runBuildStep(args, app);
      else throw new Error(`build stage: ${keyword} is not understood by this test`);
    }
    // Only what ships was compiled: no benchmarks, no test helpers.
    expect(readdirSync(join(app, 'dist'))).toEqual(['src']);

    // The runtime stage: /app from the build stage and the repository, the image's ENV and ENTRYPOINT.
    const image = await tempDir('goal-loop-image-');
    const data = join(image, 'data');
    const rt = join(image, 'app');
    mkdirSync(rt);
    const mounts = { [IMAGE_APP]: rt, '/data': data };
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: image, XDG_STATE_HOME: join(image, 'state'), XDG_CACHE_HOME: join(image, 'cache') };
    let entrypoint: string[] = [];
    for (const { keyword, args } of runtime.instructions) {
      if (keyword === 'COPY') {
        const copy = parseCopy(args);
        if (copy.from === 'build' && copy.sources.length === 1 && copy.sources[0] === `${IMAGE_APP}/node_modules`) productionModules(join(rt, copy.dest));
        else if (copy.from === 'build')
          copyInto(
            copy.sources.map((s) => hostPath(s, { [IMAGE_APP]: app }).slice(app.length + 1)),
            app,
            copy.dest,
            rt,
          );
        else copyInto(copy.sources, ROOT, copy.dest, rt);
      } else if (keyword === 'RUN') {
        // Only the data folder is made here (apt-get: this machine has the packages).
        if (/\/data\b/.test(args)) mkdirSync(join(data, 'workspaces'), { recursive: true });
      } else if (keyword === 'ENV') {
        for (const [k, v] of Object.entries(parseEnv(args))) env[k] = hostPath(v, mounts);
      } else if (keyword === 'ENTRYPOINT') {
        entrypoint = execForm(args);
      } else if (keyword === 'WORKDIR') expect(args).toBe(IMAGE_APP);
    }
    // tini is the image's init: the command after its `--` is what runs.
    expect(entrypoint.slice(0, 2)).toEqual(['/usr/bin/tini', '--']);
    const command = entrypoint.slice(2).map((w) => hostPath(w, mounts));
    expect(command[0]).toBe('node');
    command[0] = process.execPath;

    const version = await run([...command, '--version'], env, rt);
    expect(version).toMatchObject({ code: 0, stdout: `${PKG.version}\n` });
    const help = await run([...command, '--help'], env, rt);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: goal-loop <command>/);
    const plan = await run([...command, 'plan', '--goal', hostPath(`${IMAGE_APP}/examples/demo-goal.yml`, mounts)], env, rt);
    expect(plan.stderr).toBe('');
    expect(plan.code).toBe(0);
    const status = await run([...command, 'status'], env, rt);
    expect(status).toMatchObject({ code: 0, stdout: expect.stringContaining(`no goals in the ledger yet (${join(data, 'ledger.db')} does not exist`) });
  });
});
