# goal-loop: the GitHub App (`serve`), scale-out workers (`worker`) and the CLI, in one image.
# Embedded: `docker run … -v goal-loop:/data goal-loop serve` (SQLite ledger and queue in /data).
# Scale-out: set DATABASE_URL=postgres://… and run `serve` (webhooks only) and any number of
# `worker` containers (the CMD below is `serve`; pass `worker` to run one). See README, "Durable work".
# The bot runs as the unprivileged `node` user; each command runs in a bubblewrap jail, which needs
# user namespaces inside the container: run it with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined
# (or a seccomp profile that allows clone/unshare with CLONE_NEWUSER). `no-new-privileges` is fine:
# Debian's bwrap is not setuid. See README, "Sandbox", and SECURITY.md.

# Node 24: the current LTS (Node 20 is past its end of life). The package still runs on >= 20.19.
FROM node:24-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies first, so a source change does not reinstall them (`prepare` would build: skipped
# here, and better-sqlite3's own install script run on its own).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild better-sqlite3
# Only what ships is compiled (tsconfig.build.json: src/); the benchmarks build on their own
# (tsconfig.bench.json). test/release/docker-image.test.ts rebuilds exactly this file set.
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git bubblewrap ripgrep ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json app.yml ./
COPY examples ./examples
RUN mkdir -p /data/workspaces && chown -R node:node /data
USER node
ENV NODE_ENV=production \
    GOAL_LOOP_DB=/data/ledger.db \
    GOAL_LOOP_WORKSPACES=/data/workspaces \
    PORT=3000
VOLUME ["/data"]
EXPOSE 3000
# `serve` answers /health; a `worker` container has no HTTP server, so it counts as healthy
# while its process lives (run workers with --no-healthcheck to skip the probe altogether).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const w=require('fs').readFileSync('/proc/1/cmdline','utf8').includes('worker');if(w)process.exit(0);fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/src/cli/main.js"]
CMD ["serve"]
