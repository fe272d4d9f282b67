CREATE TABLE "event_files" (
	"event_id" text NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"size" integer NOT NULL,
	"content" bytea NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "event_files_event_id_filename_pk" PRIMARY KEY("event_id","filename")
);
