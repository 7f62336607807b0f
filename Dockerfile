# goal-loop: the GitHub App (`serve`), scale-out workers (`worker`) and the CLI, in one image.
# Embedded: `docker run … -v goal-loop:/data goal-loop serve` (SQLite ledger and queue in /data).
# Scale-out: set DATABASE_URL=postgres://… and run `serve` (webhooks only) and any number of
# `worker` containers (the CMD below is `serve`; pass `worker` to run one). See README, "Durable work".
# The bot runs as the unprivileged `node` user; each command runs in a bubblewrap jail, which needs
# user namespaces inside the container: run it with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined
# (or a seccomp profile that allows clone/unshare with CLONE_NEWUSER). `no-new-privileges` is fine:
# Debian's bwrap is not setuid. See README, "Sandbox and threat model".

FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY test/helpers/postgres-cluster.ts ./test/helpers/postgres-cluster.ts
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git bubblewrap ripgrep ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json app.yml ./
COPY examples ./examples
RUN mkdir -p /data && chown node:node /data
USER node
ENV NODE_ENV=production \
    GOAL_LOOP_DB=/data/ledger.db \
    GOAL_LOOP_WORKSPACES=/data/workspaces \
    PORT=3000
VOLUME ["/data"]
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/src/cli/main.js"]
CMD ["serve"]
