/** A tiny levelled logger: one line per entry, `LOG_LEVEL` (debug|info|warn|error, default info). */
export type LogLevel = "debug" | "info" | "warn" | "error";
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(scope: string): Logger;
}

export function createLogger(scope = "whenthen", level: LogLevel = envLevel(), sink: (line: string) => void = defaultSink): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < order[level]) return;
    const extra = fields && Object.keys(fields).length ? " " + safeJson(fields) : "";
    sink(`${new Date().toISOString()} ${lvl.toUpperCase().padEnd(5)} [${scope}] ${msg}${extra}`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (s) => createLogger(`${scope}:${s}`, level, sink),
  };
}

/** A logger that keeps nothing: for tests and benchmarks that do not read the log. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};

function envLevel(): LogLevel {
  const v = (process.env.LOG_LEVEL ?? "info").toLowerCase();
  return v in order ? (v as LogLevel) : "info";
}

function defaultSink(line: string) {
  process.stdout.write(line + "\n");
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, val: unknown) => (val instanceof Error ? { name: val.name, message: val.message } : val));
  } catch {
    return "[unserializable]";
  }
}
