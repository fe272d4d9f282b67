import { Breadcrumb } from "@/components/Breadcrumb";
import { AppletEditor } from "@/components/editor/AppletEditor";
import { meta as readMeta, secretList } from "@/lib/api/queries";
import { services } from "@/lib/services";

export const dynamic = "force-dynamic";
export const metadata = { title: "New applet · whenthen" };

export default async function NewAppletPage() {
  const { app } = services();
  const meta = await readMeta(app);
  const secrets = (await secretList(app)).map((s) => s.name);
  return (
    <div className="mx-auto max-w-4xl">
      <Breadcrumb href="/" label="Applets" />
      <h1 className="mb-4 text-xl font-semibold">New applet</h1>
      <AppletEditor meta={meta} secrets={secrets} />
    </div>
  );
}
