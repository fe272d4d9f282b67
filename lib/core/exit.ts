/**
 * How a composition root ends its process. A plain `process.exit` unless something in the process
 * must finish first: under `pnpm start` / `pnpm dev` the web process is also the launcher of the
 * worker (lib/launcher), and it may exit only once the worker has, with the code that says what
 * happened to either.
 */
type ExitHook = (code: number) => Promise<number>;

let hook: ExitHook | null = null;
let exiting: Promise<never> | null = null;

/** One hook per process (the launcher's); it gets the root's exit code and returns the final one. */
export function setExitHook(h: ExitHook): void {
  if (hook) throw new Error("exit: an exit hook is already set");
  hook = h;
}

/** Ends the process with `code`, after the hook; later calls (a shutdown's fallback timer) wait for the first. */
export function exitProcess(code: number): Promise<never> {
  exiting ??= (async () => {
    let final = code;
    try {
      if (hook) final = await hook(code);
    } finally {
      process.exit(final);
    }
  })();
  return exiting;
}
