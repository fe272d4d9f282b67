# One image for every process of whenthen: the web process (default command), the worker and the
# nightly backup (see docker-compose.yml, which picks the command per service).
#
#   docker build -t whenthen .
#   docker run -p 3000:3000 -v whenthen-data:/data whenthen                        web
#   docker run -v whenthen-data:/data whenthen node dist/worker.mjs                  worker
#
# Every process runs `node` on the JavaScript `pnpm build` compiled into dist/ (scripts/build-server.mjs):
# no TypeScript loader, no wrapper process; with compose's `init: true` signals go from tini to node.

ARG NODE_IMAGE=node:22-bookworm-slim

# ---- build: toolchain, all dependencies, next build + dist/, then drop devDependencies --------
FROM ${NODE_IMAGE} AS build

# python3/make/g++ compile better-sqlite3 against this image's Node; they stay in this stage.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
# The version the lockfile was written with (DESIGN.md: newer builds may refuse it).
RUN npm install -g pnpm@12.4.2

# node-gyp uses the headers the Node image ships instead of downloading them; CI=true keeps pnpm
# non-interactive.
ENV npm_config_nodedir=/usr/local \
  CI=true \
  NEXT_TELEMETRY_DISABLED=1

WORKDIR /app

# Manifests first, so the dependency layer is rebuilt only when they change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages/schedules/package.json packages/schedules/package.json
COPY packages/automations/package.json packages/automations/package.json
RUN pnpm install --frozen-lockfile

COPY . .
RUN pnpm build \
  && rm -rf .next/cache
# Runtime needs only "dependencies": dist/ is plain JavaScript, so tsx, esbuild and TypeScript are
# devDependencies and stay out. A fresh install from the filled store, not `--prod` over the full
# one: that only unlinks the devDependencies and leaves their files in node_modules/.pnpm
# (measured: 820 MB → 457 MB of node_modules). The compiled better-sqlite3 comes back from the
# store's build cache.
RUN rm -rf node_modules packages/*/node_modules \
  && pnpm install --frozen-lockfile --prod --offline

# ---- runtime -----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime

# sqlite3 is what scripts/backup.sh uses for the online backup (and lets you inspect /data/app.db);
# postgresql-client (15 on bookworm) its pg_dump on PostgreSQL, so the compose postgres service is
# 15 too (pg_dump refuses a newer server).
RUN apt-get update \
  && apt-get install -y --no-install-recommends sqlite3 postgresql-client \
  && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production \
  DATA_DIR=/data \
  HOST=0.0.0.0 \
  PORT=3000 \
  SMTP_INBOUND_PORT=2525 \
  NEXT_TELEMETRY_DISABLED=1

WORKDIR /app
# Code and node_modules stay owned by root: the app cannot rewrite itself. Next writes its runtime
# cache under .next/cache, and /data is created owned by `node` so a fresh named volume mounted
# there inherits that owner.
COPY --from=build /app /app
RUN mkdir -p /app/.next/cache /data \
  && chown node:node /app/.next/cache /data

USER node
VOLUME ["/data"]
# 3000: web (Caddy proxies to it). 2525: inbound SMTP (compose publishes host port 25 to it, so
# nothing runs as root).
EXPOSE 3000 2525

# The slim image has no curl; the check is plain JavaScript. 200 only while the worker's heartbeat is fresh.
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
  CMD ["node", "scripts/healthcheck.mjs", "web"]

# Migrations run when the process opens the database (lib/db/client.ts), so a new image upgrades
# the schema on boot.
CMD ["node", "dist/server.mjs"]
