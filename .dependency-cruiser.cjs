/**
 * The layers of lib/, bottom to top, and the one rule that keeps them: a module imports only from
 * its own layer or a lower one, and no import circle, type imports included
 * (docs/architecture.md, "Where new code goes"). Checked by tests/unit/architecture.test.ts.
 *
 *   core    lib/core                         pure helpers: clock, ids, config, log, errors
 *   store   lib/db                           the store seam, its model (lib/db/store/types/*), both engines
 *   domain  lib/<everything else>            applets, definition, executor, triggers, actions, alerts, timed…
 *   edges   lib/api, lib/http, lib/bus,      the API, the ingress, the live bus, the worker's queue loop
 *           lib/queue/loop.ts
 *   browser lib/ui                           what pages and components run in the browser
 *   roots   lib/app.ts, lib/services.ts      the composition roots' services (server.ts, worker/, cli/ sit above)
 *
 * Domain modules take the services they need as `App` (a type import of lib/app.ts): naming the
 * type loads nothing, so type-only imports of lib/app.ts are allowed; anything else of a root is not.
 */
const CORE = "^lib/core/";
const STORE = "^lib/db/";
const EDGES = "^lib/(api/|http/|bus/|queue/loop[.]ts$)";
const BROWSER = "^lib/ui/";
const ROOTS = "^lib/(app|services)[.]ts$";
const ABOVE_DOMAIN = `${EDGES}|${BROWSER}|${ROOTS}`;

module.exports = {
  forbidden: [
    { name: "no-circular", comment: "An import circle, type imports included.", severity: "error", from: { path: "^lib/" }, to: { circular: true } },
    {
      name: "core-is-the-bottom",
      comment: "lib/core imports nothing else of lib/.",
      severity: "error",
      from: { path: CORE },
      to: { path: "^lib/", pathNot: CORE },
    },
    {
      name: "store-imports-only-core",
      comment:
        "The store is the layer under the domain: it imports its own model and lib/core. What it must ask the domain inside a transaction (the alert decisions of a settle) it is given when it is opened (AlertPolicy).",
      severity: "error",
      from: { path: STORE },
      to: { path: "^lib/", pathNot: `${STORE}|${CORE}` },
    },
    {
      name: "domain-does-not-import-edges",
      comment: "Applets, executor, triggers, actions, alerts… never import the API, the ingress, the bus, the browser's modules or a root (a type import of App aside).",
      severity: "error",
      from: { path: "^lib/", pathNot: `${CORE}|${STORE}|${ABOVE_DOMAIN}` },
      to: { path: ABOVE_DOMAIN, pathNot: "^lib/app[.]ts$" },
    },
    {
      name: "domain-imports-app-only-as-a-type",
      severity: "error",
      from: { path: "^lib/", pathNot: ROOTS },
      to: { path: "^lib/app[.]ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "edges-do-not-import-the-browser",
      comment: "The API and the ingress never import lib/ui (pages' and components' code).",
      severity: "error",
      from: { path: EDGES },
      to: { path: BROWSER },
    },
    {
      name: "browser-code-takes-only-types-from-the-server",
      comment: "lib/ui runs in the browser: it may use pure domain modules and the store's model, but from the API, the ingress, the bus, the engines and the roots it takes types only.",
      severity: "error",
      from: { path: BROWSER },
      to: { path: `${EDGES}|${ROOTS}|^lib/db/store/(sqlite|postgres)/`, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "lib-does-not-import-pages",
      comment: "lib/ never imports components/ or app/ (the pages sit above it).",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "^(components|app)/" },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".mjs", ".js"] },
  },
};
