/**
 * A listen() failure in the user's words: which setting chose the port and what to do, instead of
 * Node's bare `listen EADDRINUSE: address already in use 0.0.0.0:3000`.
 */
export function listenErrorMessage(err: unknown, variable: string, port: number, host: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host}:${port}`;
  if (code === "EADDRINUSE") {
    return `port ${port} is already in use (${where}, set by ${variable}); stop what is listening there or choose another port, e.g. ${variable}=${port + 1}`;
  }
  if (code === "EACCES") {
    return `not allowed to listen on port ${port} (${where}, set by ${variable}); ports below 1024 need root: choose a higher port, e.g. ${variable}=${port < 1024 ? port + 3000 : port + 1}`;
  }
  if (code === "EADDRNOTAVAIL") return `cannot listen on ${where}: ${host} is not an address of this machine (set by HOST)`;
  return `cannot listen on ${where} (${variable}): ${err instanceof Error ? err.message : String(err)}`;
}
