#!/usr/bin/env node
// The `identity` command runs the built JavaScript (`npm ci` builds it).
await import("../dist/src/main.js");
