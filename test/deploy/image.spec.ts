import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { parseServeConfig, SERVE_OPTIONS, type ServeConfig } from "../../src/app/config.js";
import { isPostgresUrl } from "../../src/store/db.js";
import { OPS_PATHS } from "../../src/ops/endpoints.js";
import type { RunningServer } from "../../src/app/server.js";
import { startTestServer } from "../support/server.js";

/**
 * No container engine runs here, so the image is checked as text: the
 * Dockerfile, compose.yaml and the README's commands are parsed and held
 * against the configuration reference (SERVE_OPTIONS), the probes and
 * package.json. The health checks' scripts are run against a real server.
 */

// ---- Dockerfile, parsed line by line -------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}

interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

/** Instructions, stage by stage: continuation lines joined, comments dropped. */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#") || (line === "" && current === "")) continue;
    if (line.endsWith("\\")) {
      current += line.slice(0, -1) + " ";
      continue;
    }
    current += line;
    if (current.trim()) logical.push(current.trim());
    current = "";
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line)!;
    const instruction = { keyword: keyword!.toUpperCase(), args: args!.replace(/\s+/g, " ").trim() };
    if (instruction.keyword === "FROM") {
      const [image, as, name] = instruction.args.split(" ");
      stages.push({ image: image!, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] });
    } else {
      assert.ok(stages.length > 0, `${instruction.keyword} before any FROM`);
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return stages;
}

const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const last = (stage: Stage, keyword: string) => all(stage, keyword).at(-1);

/** An exec-form argument list (`["node", "x"]`); the shell form is refused: it would put sh between the signals and node. */
function execForm(args: string, what: string): string[] {
  assert.ok(args.startsWith("["), `${what} must be in exec form (a JSON array): ${args}`);
  return JSON.parse(args) as string[];
}

/** `ENV A=1 B="two"` as a record. */
function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const args of all(stage, "ENV")) {
    for (const [, key, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
      env[key!] = value!.startsWith('"') ? (JSON.parse(value!) as string) : value!;
    }
  }
  return env;
}

/** `npm ci`/`npm install` commands inside a RUN. */
const npmInstalls = (run: string) => run.split(/&&|;|\|\|/).map((c) => c.trim()).filter((c) => /^npm (ci|install|i)\b/.test(c));

// ---- shared helpers ------------------------------------------------------

const FLAGS = new Set(SERVE_OPTIONS.map((o) => `--${o.flag}`));
const VARIABLES = new Set(SERVE_OPTIONS.map((o) => o.env));
/** Variables that look like the service's own settings. */
const LOOKS_OURS = /^(IDENTITY_\w+|DATABASE_URL|PORT|HOST|LOG_LEVEL)$/;

/** Every `--flag` of an argument list is an option of identity serve. */
function assertRealFlags(args: string[], where: string): void {
  for (const arg of args.filter((a) => a.startsWith("--"))) {
    assert.ok(FLAGS.has(arg.split("=")[0]!), `${where}: ${arg} is not an option of identity serve (src/app/config.ts SERVE_OPTIONS)`);
  }
}

function assertRealVariables(names: string[], where: string): void {
  for (const name of names.filter((n) => LOOKS_OURS.test(n))) {
    assert.ok(VARIABLES.has(name), `${where}: ${name} is not a variable of identity serve (src/app/config.ts SERVE_OPTIONS)`);
  }
}

/** Compose's `${NAME:-default}` and `${NAME}`, as compose resolves them with nothing set. */
const interpolate = (value: string) => value.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_, _name: string, fallback?: string) => fallback ?? "");

/** The URL a health check's `node -e` script fetches, with the environment it runs in. */
function healthUrl(argv: string[], env: Record<string, string>): URL {
  assert.deepEqual(argv.slice(0, 2), ["node", "-e"], `a node one-liner, not curl (the image has no curl): ${argv.join(" ")}`);
  const expression = /fetch\((.+?)\)\.then/.exec(argv[2]!)?.[1];
  assert.ok(expression, `the script fetches a URL: ${argv[2]}`);
  return new URL(new Function("process", `return ${expression}`)({ env }) as string);
}

/** Run a health check's script as the engine would (exit status 0 = healthy); the server answering it runs in this process. */
function runHealthCheck(argv: string[], env: Record<string, string>): Promise<number | null> {
  const child = spawn(process.execPath, argv.slice(1), { env: { ...process.env, ...env }, stdio: "ignore", timeout: 15_000 });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve(code));
  });
}

// ---- the files -----------------------------------------------------------

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  engines: { node: string };
  scripts: Record<string, string>;
  allowScripts: Record<string, boolean>;
  devDependencies: Record<string, string>;
};
const stages = parseDockerfile(readFileSync("Dockerfile", "utf8"));
const final = stages.at(-1)!;
const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));
const imageEnv = envOf(final);
const entrypoint = execForm(last(final, "ENTRYPOINT") ?? "[]", "ENTRYPOINT");
const cmd = execForm(last(final, "CMD")!, "CMD");
const argv = [...entrypoint, ...cmd];
const serveArgs = argv.slice(argv.indexOf("serve") + 1);
/** What identity serve runs with in the image, as its own parser reads it (it throws on an unknown flag). */
const imageConfig = (): ServeConfig => parseServeConfig(serveArgs, imageEnv);
const exposed = all(final, "EXPOSE").flatMap((a) => a.split(" ")).map((p) => Number(p.split("/")[0]));
const volumes = all(final, "VOLUME").flatMap((a) => (a.startsWith("[") ? (JSON.parse(a) as string[]) : a.split(" ")));
const compose = parseYaml(readFileSync("compose.yaml", "utf8")) as {
  services: Record<string, Record<string, any>>;
};
const readme = readFileSync("README.md", "utf8");

describe("container image (Dockerfile, compose.yaml, README)", () => {
  describe("Dockerfile", () => {
    it("builds every stage on the official Node image of the version package.json targets", () => {
      const major = /(\d+)/.exec(pkg.engines.node)![1];
      for (const stage of stages) {
        if (stageNames.has(stage.image)) continue;
        assert.match(stage.image, new RegExp(`^node:${major}(-[\\w.-]+)?$`), `FROM ${stage.image}`);
      }
      assert.ok(stages.length >= 2, "multi-stage: the toolchain stays out of the final image");
    });

    it("runs as a user other than root", () => {
      const user = last(final, "USER");
      assert.ok(user, "the final stage sets USER");
      assert.ok(!/^(root|0)(:.*)?$/.test(user), `USER ${user}`);
    });

    it("installs no devDependencies in the final image, and compiles only the install scripts package.json allows", () => {
      for (const run of all(final, "RUN")) {
        for (const install of npmInstalls(run)) assert.match(install, /--omit=dev/, `final stage: ${install}`);
      }
      const copied = all(final, "COPY").filter((args) => /\bnode_modules\b/.test(args));
      assert.ok(copied.length > 0, "node_modules come from another stage");
      for (const copy of copied) {
        const from = /--from=(\S+)/.exec(copy)?.[1];
        const source = stages.find((s) => s.name === from);
        assert.ok(source, `${copy}: node_modules from a build stage`);
        const installs = all(source, "RUN").flatMap(npmInstalls);
        assert.ok(installs.length > 0);
        for (const install of installs) {
          assert.match(install, /--omit=dev/, `stage ${from}: ${install}`);
          // The project's own `prepare` builds with tsc, a devDependency; each package's script is run by name below.
          assert.match(install, /--ignore-scripts/, `stage ${from}: ${install}`);
        }
        for (const run of all(source, "RUN")) {
          for (const [, names] of run.matchAll(/npm rebuild ((?:[\w@/.-]+ ?)+)/g)) {
            for (const name of names!.trim().split(" ")) assert.equal(pkg.allowScripts[name], true, `npm rebuild ${name}: not allowed in package.json allowScripts`);
          }
        }
      }
      for (const dev of Object.keys(pkg.devDependencies)) {
        assert.ok(!all(final, "RUN").some((run) => run.includes(dev)), `the final stage names the devDependency ${dev}`);
      }
    });

    it("copies into the stage that runs `npm run build` every folder the build reads, the admin console's included", () => {
      const builder = stages.find((stage) => all(stage, "RUN").some((run) => run.includes("npm run build")));
      assert.ok(builder, "a stage runs npm run build");
      const copied = all(builder, "COPY").flatMap((args) => args.split(" ").slice(0, -1));
      // tsc reads tsconfig*.json, src and gen; esbuild bundles console/ (package.json build:console).
      for (const needed of ["tsconfig.json", "tsconfig.build.json", "src", "gen", "console"]) {
        assert.ok(copied.includes(needed), `the build stage copies ${needed}`);
      }
      assert.match(pkg.scripts["build:console"]!, /console\/src\/main\.tsx/);
      assert.ok(all(final, "COPY").some((args) => /--from=\S+ \/app\/dist /.test(args)), "the final image takes dist/, console bundle and all");
    });

    it("starts identity serve as `npm start` does, with real options only", () => {
      assert.deepEqual(argv.slice(0, 3), ["node", "dist/src/main.js", "serve"]);
      assert.ok(pkg.scripts.start!.startsWith("node dist/src/main.js serve"), "the same entry point as npm start");
      assertRealFlags(serveArgs, "Dockerfile CMD/ENTRYPOINT");
      for (const stage of stages) assertRealVariables(Object.keys(envOf(stage)), `Dockerfile ENV (stage ${stage.name ?? "final"})`);
      for (const name of Object.keys(imageEnv)) {
        assert.ok(VARIABLES.has(name) || name === "NODE_ENV", `the final image sets ${name}, which identity serve does not read`);
      }
    });

    it("listens on every interface, on the exposed port, with the SQLite file on a volume the user owns", () => {
      assert.equal(imageConfig().host, "0.0.0.0");
      assert.deepEqual(exposed, [imageConfig().port]);
      const volume = volumes.find((v) => imageConfig().database.startsWith(`${v.replace(/\/$/, "")}/`));
      assert.ok(volume, `the database ${imageConfig().database} is on a VOLUME (${volumes.join(", ")})`);
      const user = last(final, "USER")!.split(":")[0];
      assert.ok(
        all(final, "RUN").some((run) => run.includes(`chown ${user}`) && run.includes(volume)),
        `${volume} belongs to ${user}, who writes the database there`,
      );
    });

    it("checks its health on a real probe of the port it listens on", () => {
      const healthcheck = last(final, "HEALTHCHECK")!;
      const check = execForm(healthcheck.replace(/^(--\S+ )*CMD /, ""), "HEALTHCHECK");
      const url = healthUrl(check, imageEnv);
      assert.equal(url.hostname, "127.0.0.1");
      assert.equal(Number(url.port), imageConfig().port);
      assert.ok((OPS_PATHS as readonly string[]).includes(url.pathname) && url.pathname !== "/metrics", `HEALTHCHECK on ${url.pathname}`);
    });
  });

  describe("compose.yaml", () => {
    const identity = compose.services.identity!;
    const postgres = compose.services.postgres!;
    const composeEnv = Object.fromEntries(Object.entries((identity.environment ?? {}) as Record<string, string>).map(([k, v]) => [k, interpolate(String(v))]));
    const composeArgs: string[] = identity.command ?? cmd;
    const config = () => parseServeConfig(composeArgs.slice(composeArgs.indexOf("serve") + 1), { ...imageEnv, ...composeEnv });

    it("builds the image of this Dockerfile, and runs PostgreSQL from its official image", () => {
      assert.ok(identity.build === "." || identity.build?.context === ".", "build: .");
      assert.match(postgres.image, /^postgres:\d+(-[\w.-]+)?$/);
    });

    it("sets real options only, and points the service at the postgres service with its credentials", () => {
      assertRealVariables(Object.keys(composeEnv), "compose.yaml environment");
      for (const name of Object.keys(composeEnv)) assert.ok(VARIABLES.has(name), `compose.yaml sets ${name}, which identity serve does not read`);
      assertRealFlags(composeArgs, "compose.yaml command");
      const database = config().database;
      assert.ok(isPostgresUrl(database), database);
      const url = new URL(database);
      const pg = Object.fromEntries(Object.entries(postgres.environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v))]));
      assert.equal(url.hostname, "postgres");
      assert.equal(decodeURIComponent(url.username), pg.POSTGRES_USER);
      assert.equal(decodeURIComponent(url.password), pg.POSTGRES_PASSWORD);
      assert.equal(url.pathname, `/${pg.POSTGRES_DB}`);
    });

    it("publishes the port the service listens on", () => {
      const containerPorts = (identity.ports as string[]).map((p) => Number(String(p).split(":").at(-1)));
      assert.deepEqual(containerPorts, [config().port]);
    });

    it("starts the service once PostgreSQL is healthy, and calls it healthy when /readyz answers", () => {
      assert.equal(identity.depends_on?.postgres?.condition, "service_healthy");
      assert.ok((postgres.healthcheck.test as string[]).includes("pg_isready"));
      const [form, ...check] = identity.healthcheck.test as string[];
      assert.equal(form, "CMD");
      const url = healthUrl(check, { ...imageEnv, ...composeEnv });
      assert.equal(url.pathname, "/readyz");
      assert.equal(Number(url.port), config().port);
    });
  });

  describe("the health checks' scripts, run against a real server", () => {
    let server: RunningServer;
    let port: string;
    before(async () => {
      server = await startTestServer();
      port = new URL(server.url).port;
    });
    after(() => server?.close());

    it("the image's HEALTHCHECK passes on a running server and fails when nothing answers", async () => {
      const check = execForm(last(final, "HEALTHCHECK")!.replace(/^(--\S+ )*CMD /, ""), "HEALTHCHECK");
      assert.equal(await runHealthCheck(check, { ...imageEnv, PORT: port }), 0);
      assert.equal(await runHealthCheck(check, { ...imageEnv, PORT: "1" }), 1);
    });

    it("compose's readiness check passes on a ready server", async () => {
      const [, ...check] = compose.services.identity!.healthcheck.test as string[];
      const script = check[2]!.replace(`:${imageConfig().port}/`, `:${port}/`);
      assert.equal(await runHealthCheck([check[0]!, check[1]!, script], {}), 0);
    });
  });

  describe("README", () => {
    const commands = readme.split("\n").map((l) => l.replace(/\s+#.*$/, "").trim());
    const build = commands.find((l) => l.startsWith("docker build "));
    const run = commands.find((l) => l.startsWith("docker run "));

    it("shows the commands that build and run the image, and compose", () => {
      assert.ok(build && run, "docker build and docker run in the README");
      assert.ok(commands.includes("docker compose up"), "docker compose up in the README");
      const tag = /-t (\S+) \.$/.exec(build)?.[1];
      assert.ok(tag, build);
      assert.equal(run.split(" ").at(-1), tag, "docker run runs the image docker build tagged");
      assert.equal(compose.services.identity!.image, tag, "compose names the image the same");
    });

    it("publishes the exposed port, mounts the volume of the database and sets real variables only", () => {
      const words = run!.split(/\s+/);
      const published = words.flatMap((w, i) => (w === "-p" ? [words[i + 1]!] : []));
      assert.deepEqual(published.map((p) => Number(p.split(":").at(-1))), [imageConfig().port]);
      const mounts = words.flatMap((w, i) => (w === "-v" ? [words[i + 1]!.split(":")[1]!] : []));
      assert.ok(mounts.some((m) => imageConfig().database.startsWith(`${m}/`)), `-v mounts the directory of ${imageConfig().database}`);
      const variables = words.flatMap((w, i) => (w === "-e" ? [words[i + 1]!.split("=")[0]!] : []));
      assertRealVariables(variables, "README docker run");
      for (const name of variables) assert.ok(VARIABLES.has(name), `README: docker run -e ${name}`);
    });

    it("says where the image listens and keeps its database as the image does", () => {
      assert.ok(readme.includes(imageConfig().database), `the README names ${imageConfig().database}`);
      assert.ok(readme.includes(`0.0.0.0:${imageConfig().port}`), `the README says it listens on 0.0.0.0:${imageConfig().port}`);
    });
  });
});
