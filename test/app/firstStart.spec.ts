import assert from "node:assert/strict";
import { adminCommand, passkeyNote } from "./../../src/app/firstStart.js";

/** Issue 48 §2: the command a first start prints where it makes no administrator (its output is not a terminal). */
describe("the first start's command that makes an administrator", () => {
  const at = { script: "/srv/identity/dist/src/main.js", cwd: "/srv/identity" };

  it("runs this same program from where serve started, and names the database only when the command would not find it", () => {
    assert.equal(adminCommand({ ...at, database: "./data/identity.sqlite", env: {} }), "node dist/src/main.js user create --name admin --admin --password <password>");
    // The container's: DATABASE_URL is set for every command run in it.
    assert.equal(
      adminCommand({ script: "/app/dist/src/main.js", cwd: "/app", database: "/data/identity.sqlite", env: { DATABASE_URL: "/data/identity.sqlite" } }),
      "node dist/src/main.js user create --name admin --admin --password <password>",
    );
    assert.equal(
      adminCommand({ ...at, database: "/tmp/a b/x.sqlite", env: {} }),
      "node dist/src/main.js user create --name admin --admin --password <password> --database '/tmp/a b/x.sqlite'",
    );
    assert.match(adminCommand({ script: "/opt/bin/identity.js", cwd: "/home/me", database: "./data/identity.sqlite", env: {} }), /^node \/opt\/bin\/identity\.js user create /);
  });

  it("leaves a database URL's password out: the line may go to a log", () => {
    const command = adminCommand({ ...at, database: "postgres://id:s3cret@db:5432/identity", env: {} });
    assert.doesNotMatch(command, /s3cret/);
    assert.match(command, /--database postgres:\/\/id:PASSWORD@db:5432\/identity$/);
    // Named by DATABASE_URL, as in compose.yaml: not repeated at all.
    assert.doesNotMatch(adminCommand({ ...at, database: "postgres://id:s3cret@db/identity", env: { DATABASE_URL: "postgres://id:s3cret@db/identity" } }), /--database/);
  });
});

/** Issue 46 §2: passkeys need a host name, and the first start says how to get one locally. */
describe("the first start's note on passkeys", () => {
  it("names --issuer http://localhost:<port> where the issuer is an IP address, and says nothing otherwise", () => {
    assert.match(passkeyNote("http://127.0.0.1:8000"), /Passkeys need a host name.*--issuer http:\/\/localhost:8000$/m);
    assert.match(passkeyNote("http://[::1]:8000"), /--issuer http:\/\/localhost:8000/);
    assert.equal(passkeyNote("http://localhost:8000"), "");
    assert.equal(passkeyNote("https://id.example.com"), "");
  });
});
