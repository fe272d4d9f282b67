CREATE TABLE "applet_versions" (
	"id" text PRIMARY KEY NOT NULL,
	"applet_id" text NOT NULL,
	"version" integer NOT NULL,
	"name" text NOT NULL,
	"enabled" integer NOT NULL,
	"definition" json NOT NULL,
	"source" text NOT NULL,
	"restored_from" integer,
	"author_type" text NOT NULL,
	"author_id" text,
	"author_label" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "applet_version" integer;
--> statement-breakpoint
ALTER TABLE "applet_versions" ADD CONSTRAINT "applet_versions_applet_id_applets_id_fk" FOREIGN KEY ("applet_id") REFERENCES "public"."applets"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "applet_versions_applet_version_idx" ON "applet_versions" USING btree ("applet_id","version");
--> statement-breakpoint
INSERT INTO "applet_versions" ("id", "applet_id", "version", "name", "enabled", "definition", "source", "restored_from", "author_type", "author_id", "author_label", "created_at", "updated_at")
SELECT gen_random_uuid()::text, "id", 1, "name", "enabled", "definition", 'backfill', NULL, 'system', NULL, 'before version history', "updated_at", "updated_at"
FROM "applets";
