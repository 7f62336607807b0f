# goal-loop: the GitHub App (`serve`), scale-out workers (`worker`) and the CLI, in one image.
# The sandbox needs user namespaces: run the container with a seccomp profile that allows them
# (e.g. `--security-opt seccomp=unconfined`, or a profile permitting clone/unshare with CLONE_NEWUSER)
# and without `no-new-privileges` blocking bwrap. See README, "Sandbox and threat model".

FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git bubblewrap ripgrep ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json app.yml ./
COPY examples ./examples
ENV NODE_ENV=production \
    GOAL_LOOP_DB=/data/ledger.db \
    GOAL_LOOP_WORKSPACES=/data/workspaces \
    PORT=3000
VOLUME ["/data"]
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/src/cli/main.js"]
CMD ["serve"]
