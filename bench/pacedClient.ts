// `pacedLoad` in a process of its own: options as JSON in, the result as JSON out.
import { pacedLoad, type PacedLoadOptions } from "./pacedLoad.js";

process.stdout.write(`${JSON.stringify(await pacedLoad(JSON.parse(process.argv[2]!) as PacedLoadOptions))}\n`);
