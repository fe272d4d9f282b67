-- Strict order (the definition's controls.order = "strict"): a run parked at a wait step keeps its
-- lane, so the applet's later runs in that lane wait for it to resume and finish. "holds_lane" is
-- set when such a run parks and cleared when it is queued again. The claim's one probe of
-- runs_running_idx ("is anything running in this lane?") answers for these runs too, so the claim
-- reads nothing more for an applet without the option, and the unique index keeps the rule across
-- processes: a run cannot start in a lane a waiting run holds (the loser of a race gets 23505).
ALTER TABLE "runs" ADD COLUMN "holds_lane" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
DROP INDEX "runs_running_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "runs_running_idx" ON "runs" USING btree ("applet_id","lane") WHERE ("runs"."status" = 'running' OR ("runs"."status" = 'waiting' AND "runs"."holds_lane" = 1)) AND "runs"."applet_id" IS NOT NULL;
