// The runner's logger: one line per event on stderr (stdout stays for command output), with a
// component prefix such as `[job fraud-1]` or `[kafka]`.
import type { LogLevel } from "./env";

const ORDER: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
  child(prefix: string): Logger;
  readonly level: LogLevel;
}

export function createLogger(level: LogLevel = "info", prefix = "", write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const at = (lvl: LogLevel) => (message: string) => {
    if (ORDER[lvl] <= ORDER[level]) write(`${new Date().toISOString()} ${lvl.padEnd(5)} ${prefix}${message}`);
  };
  return {
    level,
    error: at("error"),
    warn: at("warn"),
    info: at("info"),
    debug: at("debug"),
    child: (p) => createLogger(level, `${prefix}[${p}] `, write),
  };
}

export const silentLogger: Logger = {
  level: "error",
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  child: () => silentLogger,
};

/** The message of anything thrown, without a stack: what users see. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
