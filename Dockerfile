# The identity service as a container image: `docker build -t identity .`
# Three stages on the official Node 20 image (package.json: engines.node >=20).

# 1. Production dependencies only. sqlite3 is compiled from source here, the
#    one install script the project runs (package.json allowScripts); npm ci
#    skips every script (the project's `prepare` would need the dev
#    dependencies), then `npm rebuild sqlite3` runs that one.
FROM node:20-bookworm-slim AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
ENV npm_config_build_from_source=true npm_config_nodedir=/usr/local
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild sqlite3 \
 && npm cache clean --force

# 2. The build: every dependency (TypeScript and esbuild are dev
#    dependencies), then tsc and the admin console's bundle (dist/console).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY src ./src
COPY console ./console
RUN npm run build

# 3. What runs: the built JavaScript and the production node_modules, as the
#    unprivileged `node` user, with the SQLite file on a volume.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
# The database holds the private signing keys: its folder is the service user's alone.
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
VOLUME /data
# serve listens on every interface of the container; DATABASE_URL (a
# postgres:// URL, or another SQLite path) and every IDENTITY_* variable of
# the configuration reference can be set with `docker run -e`.
ENV PORT=8000 DATABASE_URL=/data/identity.sqlite
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Any command of `identity` runs the same way: `docker run ... identity backup /data/copy.sqlite`.
ENTRYPOINT ["node", "dist/src/main.js"]
CMD ["serve", "--host", "0.0.0.0"]
