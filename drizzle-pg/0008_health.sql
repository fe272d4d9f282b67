ALTER TABLE "workers" ADD COLUMN "smtp_port" integer;--> statement-breakpoint
ALTER TABLE "workers" ADD COLUMN "metrics" text;
