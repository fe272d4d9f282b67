#!/usr/bin/env node
// Container health checks (Dockerfile HEALTHCHECK, docker-compose.yml), plain JavaScript so a
// check loads nothing but Node:
//   node scripts/healthcheck.mjs web      GET /api/health: 200 while the worker's heartbeat is fresh
//   node scripts/healthcheck.mjs worker   the SMTP receiver greets with 220 (a live process with a
//                                         responsive event loop); with INBOUND_EMAIL=false, which
//                                         runs no receiver, the heartbeat as the web process sees it
import { connect } from "node:net";

/* global AbortSignal */

const role = process.argv[2];
const webUrl = process.env.HEALTHCHECK_WEB_URL || `http://127.0.0.1:${process.env.PORT || 3000}`;
const off = /^(false|0|off)$/i.test(process.env.INBOUND_EMAIL ?? "");
const done = (ok, why) => {
  if (!ok) console.error(`healthcheck ${role}: ${why}`);
  process.exit(ok ? 0 : 1);
};

function web(url) {
  fetch(`${url}/api/health`, { signal: AbortSignal.timeout(4000) }).then(
    (r) => done(r.ok, `${url}/api/health answered ${r.status}`),
    (err) => done(false, `${url}/api/health: ${err.message}`),
  );
}

function smtp(port) {
  const s = connect(port, "127.0.0.1");
  s.setTimeout(4000, () => done(false, `no SMTP greeting on port ${port} within 4 s`));
  s.on("error", (err) => done(false, `SMTP port ${port}: ${err.message}`));
  s.once("data", (d) => {
    s.end("QUIT\r\n");
    done(String(d).startsWith("220"), `SMTP port ${port} greeted with ${JSON.stringify(String(d).slice(0, 40))}`);
  });
}

if (role === "web") web(webUrl);
else if (role === "worker" && off) web(webUrl);
else if (role === "worker") smtp(Number(process.env.SMTP_INBOUND_PORT || 2525));
else done(false, `unknown role ${JSON.stringify(role)}; use web or worker`);
