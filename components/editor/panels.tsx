"use client";
import { Fragment, type ReactNode } from "react";
import { sanitizeFilename } from "@/lib/files/sanitize";
import type { Meta } from "@/lib/api/queries";
import type { FieldMeta } from "@/lib/plugin";
import type { FormConfig } from "./fields";

/**
 * The panels a plug-in asks for with a field's `preview` property, shown below its form. The
 * editor never asks which plug-in it renders: a plug-in that sets `preview` on a field gets the
 * panel, wherever it is.
 */
export type FieldPreview = NonNullable<FieldMeta["preview"]>;

export interface PanelContext {
  meta: Meta;
  /** The plug-in's form values. */
  cfg: FormConfig;
  /** The plug-in's config rendered against the sample event, once a preview has answered. */
  rendered: Record<string, unknown> | undefined;
  /** The applet has not been saved yet. */
  isNew: boolean;
  /** Saves the new applet disabled, so it has an id (and a webhook its URL) before it is finished. */
  onSaveDraft?: () => void;
}

interface Panel {
  /** The panel shows the rendered config: while it is on screen the preview follows every edit. */
  needsRender: boolean;
  render(field: FieldMeta, ctx: PanelContext): ReactNode;
}

const PANELS: Record<FieldPreview, Panel> = {
  notePath: { needsRender: true, render: (field, ctx) => <NotePath meta={ctx.meta} rendered={ctx.rendered} filenameField={field.name} /> },
  inboundAddress: { needsRender: false, render: (field, ctx) => <InboundAddress meta={ctx.meta} alias={ctx.cfg[field.name]} /> },
  webhookUrl: {
    needsRender: false,
    render: (_field, ctx) =>
      ctx.isNew ? (
        <div className="flex flex-wrap items-center gap-2 rounded-md bg-slate-50 p-3 text-sm text-slate-700 ring-1 ring-slate-200">
          <p className="min-w-0 flex-1">A webhook gets its URL when the applet is saved. Save it disabled now to get the URL and a curl line to test with; nothing runs until you enable it.</p>
          {ctx.onSaveDraft ? (
            <button type="button" className="btn-secondary" onClick={ctx.onSaveDraft}>
              Get the URL (save as a disabled draft)
            </button>
          ) : null}
        </div>
      ) : null,
  },
};

// A panel kind this build does not know (metadata from a newer server) is left out.
const panelOf = (f: FieldMeta): Panel | undefined => (f.preview ? PANELS[f.preview] : undefined);

/** Whether any of these fields shows the rendered config, so the preview must follow every edit. */
export const needsRenderedPreview = (fields: FieldMeta[]): boolean => fields.some((f) => panelOf(f)?.needsRender === true);

export function FieldPanels({ fields, ...ctx }: PanelContext & { fields: FieldMeta[] }) {
  return (
    <>
      {fields.map((f) => {
        const panel = panelOf(f);
        return panel ? <Fragment key={f.name}>{panel.render(f, ctx)}</Fragment> : null;
      })}
    </>
  );
}

/** Where a note would be written for the sample: NOTES_ROOT/folder/filename after sanitizing. */
function NotePath({ meta, rendered, filenameField }: { meta: Meta; rendered: Record<string, unknown> | undefined; filenameField: string }) {
  if (!rendered) return <p className="help">The file path for the sample event appears here.</p>;
  // The note action's own config keys beside the file name: its folder and its "if the file exists".
  const folder = typeof rendered.folder === "string" ? rendered.folder : "";
  const name = rendered[filenameField];
  const filename = typeof name === "string" ? name.trim() : "";
  const segments = folder
    .split("/")
    .filter((s) => s.trim() !== "")
    .map((s) => sanitizeFilename(s, "folder"));
  const path = [meta.notes_root.replace(/\/+$/, ""), ...segments, filename ? sanitizeFilename(filename, "note") : "(file name)"].join("/");
  const append = rendered.mode === "append";
  return (
    <p className="rounded-md bg-slate-50 px-3 py-2 text-xs text-slate-700 ring-1 ring-slate-200" data-testid="note-path">
      For the sample event this {append ? "appends to" : "creates"} <span className="code break-all">{path}</span>
      {append ? "" : " (or name (2).md if it exists)"}.
    </p>
  );
}

/** The full inbound address an alias makes, and on a laptop the command that delivers a test mail. */
export function InboundAddress({ meta, alias: value }: { meta: Meta; alias: FormConfig[string] | undefined }) {
  const alias = typeof value === "string" && value.trim() ? value.trim().toLowerCase() : null;
  const domain = meta.inbound_domain;
  const address = `${alias ?? "anything"}@${domain}`;
  const local = domain === "localhost" || domain.endsWith(".localhost") || domain.endsWith(".local");
  return (
    <div className="rounded-md bg-slate-50 p-3 text-sm ring-1 ring-slate-200" data-testid="email-address">
      <p>
        Mail to <span className="code">{alias ? address : `*@${domain}`}</span> {alias ? `(or ${alias}+anything@${domain})` : "(no alias: every address at the domain)"} fires this applet.
      </p>
      {local ? (
        <p className="mt-2 text-xs text-slate-600">
          On this machine, send a test mail with{" "}
          <span className="code select-all">
            swaks --server localhost:{meta.smtp_inbound_port} --to {alias ?? "test"}@{domain} --header &quot;Subject: Hello&quot;
          </span>
        </p>
      ) : null}
    </div>
  );
}
