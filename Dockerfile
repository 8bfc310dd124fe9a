# syntax=docker/dockerfile:1
# toolproof: OpenAI-compatible proxy that makes tool calling trustworthy.
# Build:  docker build -t toolproof .
# Run:    docker run -p 8787:8787 -e TOOLPROOF_UPSTREAM_URL=http://gpu-box:8000/v1 toolproof
# Configuration is by environment (TOOLPROOF_UPSTREAM_URL, TOOLPROOF_PORT, TOOLPROOF_API_KEYS,
# TOOLPROOF_UPSTREAM_API_KEY, TOOLPROOF_CONFIG, TOOLPROOF_LOG_LEVEL, TOOLPROOF_WORKERS) and the YAML file that
# TOOLPROOF_CONFIG names (mount it, e.g. at /etc/toolproof). Without an upstream the server
# starts its built-in simulator and says so in the log.

ARG NODE_VERSION=20

# --- build: compile TypeScript to dist/ with the dev toolchain --------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
# Dependencies first: this layer is reused until the lockfile changes.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY protocol ./protocol
COPY parsers ./parsers
COPY policies ./policies
COPY server ./server
COPY cli ./cli
COPY simulator ./simulator
RUN npm run build

# --- production dependencies only -----------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# No lifecycle scripts: the runtime dependencies are plain JavaScript.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime --------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    TOOLPROOF_HOST=0.0.0.0 \
    TOOLPROOF_PORT=8787
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The inspector page (docs/inspect.md): static files, served from /app/inspect.
COPY inspect ./inspect
COPY package.json ./
# The image's unprivileged user (uid 1000); the app only reads /app.
USER node
EXPOSE 8787
# node itself is the probe: the slim image has no curl or wget.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TOOLPROOF_PORT||8787)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (graceful close of open streams, see server/main.ts;
# with TOOLPROOF_WORKERS > 1 it forwards it to every worker and waits, see server/cluster.ts).
# It starts from the compiled dist/ directly: no build at start, first request within a second.
# The node flags are npm start's (package.json; a test keeps them equal): a young generation of
# 8 MB per semi-space instead of V8's 16 (README, Benchmarks: it bounds RSS under many streams).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=8", "dist/server/main.js"]
