// Preloaded (`--import`) into every process a bench starts: the event-loop delay histogram and
// memory, answered over the IPC channel, so the app itself carries no bench code.
//   { type: "eld-reset" }   starts a new measurement window
//   { type: "eld" }         → { type: "eld", p50, p99, max (ms), rss, heapUsed (MB), cpuMs }
//                           cpuMs: CPU time (user + system) this process used since the reset, a
//                           cost per request that contention for the cores does not change much
//   { type: "eld", gc: true } the same after a full garbage collection (needs --expose-gc): what
//                           the heap really retains, for telling a leak from a heap not yet collected
import { monitorEventLoopDelay } from "node:perf_hooks";

if (process.send) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let cpuAtReset = process.cpuUsage();
  process.on("message", (m) => {
    if (m?.type === "eld-reset") {
      h.reset();
      cpuAtReset = process.cpuUsage();
    }
    if (m?.type === "eld") {
      if (m.gc && typeof globalThis.gc === "function") globalThis.gc();
      const mem = process.memoryUsage();
      const cpu = process.cpuUsage(cpuAtReset);
      process.send({ type: "eld", p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6, rss: mem.rss / 2 ** 20, heapUsed: mem.heapUsed / 2 ** 20, cpuMs: (cpu.user + cpu.system) / 1000 });
    }
  });
  // The IPC channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
