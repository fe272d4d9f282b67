import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { AlertSettingsForm } from "@/components/AlertSettingsForm";
import { ApiTokens } from "@/components/ApiTokens";
import { ChangePassword } from "@/components/ChangePassword";
import { ImportApplets } from "@/components/ImportApplets";
import { LocalTime } from "@/components/LocalTime";
import { SecretsManager } from "@/components/SecretsManager";
import { SheetsAccessCheck } from "@/components/SheetsAccessCheck";
import { HealthPanel } from "@/components/HealthPanel";
import { checkHealth } from "@/lib/health";
import { collectHealthFigures } from "@/lib/metrics/collect";
import { alertChannelOptions, alertSettingsView, meta as readMeta, secretList, tokenList } from "@/lib/api/queries";
import { services } from "@/lib/services";

export const dynamic = "force-dynamic";
export const metadata = { title: "Settings · whenthen" };


export default async function SettingsPage() {
  const { app } = services();
  const meta = await readMeta(app);
  const cfg = app.config;
  const secrets = await secretList(app);
  const tokens = await tokenList(app);
  const beat = (await app.store.jobLocks.get("worker_heartbeat"))?.lastRunAt ?? null;
  // The same figures as GET /metrics; the receiver listens when a live worker's heartbeat says so.
  const figures = await collectHealthFigures(app);
  const listening = figures.smtpListening > 0;
  const outbox = cfg.smtpUrl ? [] : outboxFiles(path.join(cfg.dataDir, "outbox"));
  // The same report as /api/health: a full disk, a worker that stopped or reports a fault.
  const health = await checkHealth(app);
  const alerts = await alertSettingsView(app);
  const channelActions = alertChannelOptions(meta);

  return (
    <div className="mx-auto flex max-w-4xl flex-col gap-5">
      <h1 className="text-xl font-semibold">Settings</h1>

      {health.problems.length ? (
        <div role="alert" data-testid="health-problems" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900">
          <p className="font-medium">Runs may not be executing:</p>
          <ul className="mt-1 list-disc pl-5">
            {health.problems.map((p) => (
              <li key={p} className="break-words">
                {p}
              </li>
            ))}
          </ul>
        </div>
      ) : null}

      <Section title="Health" id="health">
        <HealthPanel f={figures} heartbeatAt={beat} />
        <p className="help mt-3">
          The same figures for Prometheus: <span className="code">GET {cfg.publicUrl}/metrics</span> with a read-only API token (below) as{" "}
          <span className="code">Authorization: Bearer …</span>.
        </p>
      </Section>

      <Section title="Failure alerts" id="alerts">
        <AlertSettingsForm initial={alerts} actions={channelActions} />
      </Section>

      <Section title="Secrets" id="secrets">
        <SecretsManager secrets={secrets} />
      </Section>

      <Section title="Password" id="password">
        <ChangePassword />
      </Section>

      <Section title="API tokens" id="tokens">
        <ApiTokens tokens={tokens} publicUrl={cfg.publicUrl} />
      </Section>

      <InboundMail cfg={cfg} beat={beat} listening={listening} />

      <OutboundMail cfg={cfg} outbox={outbox} />

      <Section title="Google Sheets" id="sheets">
        {meta.google_service_account_email ? (
          <>
            <p className="text-sm">
              Service account: <span className="code select-all">{meta.google_service_account_email}</span>. Share each sheet with this address as Editor.
            </p>
            <SheetsAccessCheck />
          </>
        ) : cfg.googleServiceAccountJson ? (
          <p className="text-sm text-red-800">GOOGLE_SERVICE_ACCOUNT_JSON is set but is not a readable service account key (base64 of the key JSON).</p>
        ) : (
          <p className="text-sm text-slate-600">Not configured: set GOOGLE_SERVICE_ACCOUNT_JSON (the key JSON, base64 encoded) to use the Sheets action.</p>
        )}
      </Section>

      <Section title="Push notifications" id="push">
        <dl className="grid grid-cols-1 gap-2 text-sm md:grid-cols-[12rem_1fr]">
          <dt className="text-slate-600">Default ntfy server</dt>
          <dd>
            <span className="code">{cfg.ntfyServer}</span>
            {cfg.ntfyToken ? " (with an access token)" : ""}
          </dd>
          <dt className="text-slate-600">Pushover</dt>
          <dd>
            {cfg.pushoverAppToken && cfg.pushoverUserKey
              ? "Application token and user key are set."
              : cfg.pushoverAppToken || cfg.pushoverUserKey
                ? `Only ${cfg.pushoverAppToken ? "PUSHOVER_APP_TOKEN" : "PUSHOVER_USER_KEY"} is set; actions must supply the other.`
                : "No default keys (PUSHOVER_APP_TOKEN, PUSHOVER_USER_KEY); each push action supplies its own."}
          </dd>
        </dl>
      </Section>

      <Section title="Notes" id="notes">
        <p className="text-sm">
          The note action writes under <span className="code break-all">{cfg.notesRoot}</span> (NOTES_ROOT).
        </p>
      </Section>

      <Section title="Export and import" id="export">
        <div className="flex flex-col gap-3 text-sm">
          <p className="text-slate-600">An export holds every applet with its id and webhook token, so importing it elsewhere keeps webhook URLs working. Secrets are not exported.</p>
          <div className="flex flex-wrap items-start gap-3">
            <a href="/api/export" className="btn-secondary" download>
              Export all applets
            </a>
            <ImportApplets />
          </div>
        </div>
      </Section>
    </div>
  );
}

type Config = ReturnType<typeof services>["app"]["config"];

function InboundMail({ cfg, beat, listening }: { cfg: Config; beat: string | null; listening: boolean }) {
  const publicHost = hostOf(cfg.publicUrl);
  // An MX value that is an IP address is invalid (RFC 5321 wants a name with an A/AAAA record).
  const publicHostIsIp = publicHost !== null && isIpLiteral(publicHost);
  const publicHostIsLocal = publicHost === "localhost" || (publicHost?.endsWith(".localhost") ?? false);
  const mxName = `mx.${cfg.inboundDomain}`;
  const mxTarget = publicHostIsIp ? mxName : publicHostIsLocal ? null : publicHost;
  const localDomain = cfg.inboundDomain === "localhost" || cfg.inboundDomain.endsWith(".localhost");
  return (
  <Section title="Inbound mail" id="inbound">
    <dl className="grid grid-cols-1 gap-3 text-sm md:grid-cols-[12rem_1fr]">
      <dt className="text-slate-600">Addresses</dt>
      <dd>
        <span className="code">*@{cfg.inboundDomain}</span> <span className="text-slate-600">(an email applet picks its part before the @)</span>
      </dd>
      <dt className="text-slate-600">Receiver</dt>
      <dd data-testid="receiver-status">
        {listening ? (
          <span className="text-green-800">
            Listening on port {cfg.smtpInboundPort} (worker seen <LocalTime iso={beat} relative />)
          </span>
        ) : (
          <span className="text-red-800">
            Not listening: {beat ? <>the worker was last seen <LocalTime iso={beat} relative /></> : "the worker has never run"}. Start it with <span className="code">pnpm worker</span>.
          </span>
        )}
      </dd>
      <dt className="text-slate-600">DNS</dt>
      <dd>
        {localDomain ? (
          <p className="text-slate-700">
            INBOUND_DOMAIN is {cfg.inboundDomain}: no DNS needed on a laptop. Deliver test mail with{" "}
            <span className="code">swaks --server localhost:{cfg.smtpInboundPort} --to test@{cfg.inboundDomain}</span>.
          </p>
        ) : null}
        <p className={localDomain ? "mt-2 text-slate-600" : "text-slate-700"}>{localDomain ? "On a server, set INBOUND_DOMAIN and create this record:" : "Create this record at your DNS provider:"}</p>
        <div className="overflow-x-auto">
          <table className="mt-1 text-xs">
            <thead>
              <tr className="text-left text-slate-500">
                <th className="pr-4 font-medium">Type</th>
                <th className="pr-4 font-medium">Name</th>
                <th className="pr-4 font-medium">Priority</th>
                <th className="font-medium">Value</th>
              </tr>
            </thead>
            <tbody className="font-mono">
              <tr>
                <td className="pr-4">MX</td>
                <td className="pr-4">{cfg.inboundDomain}</td>
                <td className="pr-4">10</td>
                <td>{mxTarget ?? "this server's host name"}</td>
              </tr>
            </tbody>
          </table>
        </div>
        {publicHostIsIp ? (
          <p className="help text-amber-800" data-testid="mx-ip-hint">
            PUBLIC_URL uses the address {publicHost}, but an MX record must name a host, not an IP address. Create an A record (for example{" "}
            <span className="code">{mxName}</span> → <span className="code">{publicHost}</span>) and point the MX at that name.
          </p>
        ) : null}
        <p className="help">Port 25 on the server must reach the worker (docker-compose publishes it).</p>
      </dd>
    </dl>
  </Section>
  );
}

function OutboundMail({ cfg, outbox }: { cfg: Config; outbox: { name: string; at: string; size: number }[] }) {
  return (
  <Section title="Outbound mail" id="outbound">
    {cfg.smtpUrl ? (
      <p className="text-sm">
        Sending through <span className="code">{redactUrl(cfg.smtpUrl)}</span> as <span className="code">{cfg.emailFrom}</span>.
      </p>
    ) : (
      <div className="text-sm">
        <p>
          SMTP_URL is not set: the email action writes each message to <span className="code break-all">{path.join(cfg.dataDir, "outbox")}</span> instead of sending it.
        </p>
        {outbox.length ? (
          // A list, not a table: on a phone each name gets the full width (and breaks anywhere,
          // being a file name), with its time and size under it; from `sm` up, one line each.
          <ul className="mt-2 divide-y divide-slate-100 text-xs" data-testid="outbox" aria-label="Outbox files, newest first">
            {outbox.map((f) => (
              <li key={f.name} className="py-1.5 sm:flex sm:items-baseline sm:gap-4">
                <span className="block font-mono break-all sm:min-w-0 sm:flex-1 sm:truncate" title={f.name}>
                  {f.name}
                </span>
                <span className="block text-slate-600 sm:shrink-0">
                  <LocalTime iso={f.at} /> · <span className="tabular-nums">{(f.size / 1024).toFixed(1)} KB</span>
                </span>
              </li>
            ))}
          </ul>
        ) : (
          <p className="mt-2 text-slate-600">The outbox is empty.</p>
        )}
      </div>
    )}
  </Section>
  );
}

function Section({ title, id, children }: { title: string; id: string; children: React.ReactNode }) {
  return (
    <section className="card" aria-labelledby={`${id}-h`}>
      <h2 id={`${id}-h`} className="mb-3 text-base font-semibold">
        {title}
      </h2>
      {children}
    </section>
  );
}

function isIpLiteral(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(":");
}

function hostOf(url: string): string | null {
  try {
    // URL keeps the brackets of an IPv6 host.
    return new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return null;
  }
}

/** smtp://user:pass@host:587 → smtp://host:587: the page never shows credentials. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(unparseable SMTP_URL)";
  }
}

function outboxFiles(dir: string): { name: string; at: string; size: number }[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".eml"));
  } catch {
    return [];
  }
  return names
    .map((name) => {
      const st = statSync(path.join(dir, name));
      return { name, at: st.mtime.toISOString(), size: st.size };
    })
    .sort((a, b) => b.at.localeCompare(a.at))
    .slice(0, 20);
}
