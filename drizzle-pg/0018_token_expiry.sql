-- An API token may expire (set when it is made, in Settings or POST /api/tokens): past this time
-- (ISO 8601, UTC) it is refused with 401 saying so. NULL: it never expires (every token made before).
ALTER TABLE "api_tokens" ADD COLUMN "expires_at" text;
