import { Breadcrumb } from "@/components/Breadcrumb";
import { AppletEditor } from "@/components/editor/AppletEditor";
import { apiOk, services } from "@/lib/ui/services";
import type { Meta } from "@/lib/ui/types";

export const dynamic = "force-dynamic";
export const metadata = { title: "New applet · whenthen" };

export default async function NewAppletPage() {
  const meta = await apiOk<Meta>("/api/meta");
  const secrets = (await services().app.secrets.list()).map((s) => s.name);
  return (
    <div className="mx-auto max-w-4xl">
      <Breadcrumb href="/" label="Applets" />
      <h1 className="mb-4 text-xl font-semibold">New applet</h1>
      <AppletEditor meta={meta} secrets={secrets} />
    </div>
  );
}
