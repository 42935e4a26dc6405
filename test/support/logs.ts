import type { LogLevel } from "../../src/shared/log.js";
import { createLogger, type Logger } from "../../src/shared/log.js";

export interface CapturedLogs {
  logger: Logger;
  /** Everything written, exactly as it would reach the terminal. */
  text(): string;
  /** Each line parsed; throws if one is not a JSON object. */
  lines(): Record<string, any>[];
}

/** The real pino logger, writing into memory instead of standard error. */
export function captureLogs(level: LogLevel = "trace"): CapturedLogs {
  const chunks: string[] = [];
  const logger = createLogger({ level, destination: { write: (chunk: string) => void chunks.push(chunk) } });
  const text = () => chunks.join("");
  return {
    logger,
    text,
    lines: () =>
      text()
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Record<string, any>),
  };
}
