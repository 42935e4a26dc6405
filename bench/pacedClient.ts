// `pacedLoad` in a process of its own: options as JSON on stdin (100 requests with tokens make ~97 KB, near Linux's 128 KiB limit for one argument), the result as JSON on stdout.
import { text } from "node:stream/consumers";
import { pacedLoad, type PacedLoadOptions } from "./pacedLoad.js";

const options = JSON.parse(await text(process.stdin)) as PacedLoadOptions;
process.stdout.write(`${JSON.stringify(await pacedLoad(options))}\n`);
