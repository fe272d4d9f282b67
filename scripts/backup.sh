#!/usr/bin/env bash
# Online backup of the whenthen SQLite database (`pnpm backup`).
#
#   bash scripts/backup.sh            one backup now, checked, then prune to the newest BACKUP_KEEP
#   bash scripts/backup.sh --daily    loop: one backup every day at BACKUP_AT (UTC), for the compose `backup` service
#
# Writes DATA_DIR/backups/<UTC timestamp>.db (e.g. 20261130T071500Z.db, so names sort by time), runs
# PRAGMA integrity_check on the copy and fails loudly unless it says "ok", then deletes all but the
# newest BACKUP_KEEP (default 14) files of that name pattern. Other files in backups/ are left alone.
#
# The copy is SQLite's online backup taken inside one read transaction, so it is one consistent
# snapshot of the WAL database while the app and the worker keep writing. A plain `.backup` (or
# better-sqlite3's db.backup()) copies in steps and restarts from scratch whenever another process
# commits between two steps: measured here, it never finished against a busy writer. Never `cp` a
# live WAL database: committed transactions may still be only in app.db-wal.
#
# Paths follow lib/core/config.ts: DATA_DIR (default ./data) and DATABASE_URL (file:PATH or a bare
# path, default DATA_DIR/app.db), relative paths against the current directory.
#
# Uses the sqlite3 CLI when it is installed (the Docker image has it), else scripts/backup.ts
# through tsx and better-sqlite3. WHENTHEN_BACKUP_TOOL=sqlite3|node forces one.
#
# On PostgreSQL (DATABASE_URL=postgres://…) it runs pg_dump instead: DATA_DIR/backups/<stamp>.dump
# in pg_dump's custom format (one consistent snapshot while every process keeps writing), checked
# by reading its table of contents back with pg_restore --list, and pruned the same way. Restore:
# pg_restore --clean --if-exists --no-owner -d "$DATABASE_URL" <file> (docs/backup.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# restore.sh sets LOG_NAME before sourcing this file so its messages say "restore:".
die() {
  echo "${LOG_NAME:-backup}: ERROR: $*" >&2
  exit 1
}
log() { echo "${LOG_NAME:-backup}: $*"; }

resolve_paths() {
  DATA_DIR_ABS="$(realpath -m -- "${DATA_DIR:-./data}")"
  local url="${DATABASE_URL:-}"
  if [[ -z "$url" ]]; then
    DB="$DATA_DIR_ABS/app.db"
  elif [[ "$url" =~ ^postgres(ql)?:// ]]; then
    DB=""
    PG_URL="$url"
  elif [[ "$url" == file:* ]]; then
    DB="$(realpath -m -- "${url#file:}")"
  elif [[ "$url" =~ ^[A-Za-z][A-Za-z0-9+.-]*:// ]]; then
    die "DATABASE_URL scheme \"${url%%:*}:\" is not supported; only SQLite files (file:./data/app.db) and postgres:// can be backed up"
  else
    DB="$(realpath -m -- "$url")"
  fi
  BACKUP_DIR="$DATA_DIR_ABS/backups"
  KEEP="${BACKUP_KEEP:-14}"
  [[ "$KEEP" =~ ^[1-9][0-9]*$ ]] || die "BACKUP_KEEP must be a positive integer, got \"$KEEP\""
}

pick_tool() {
  local tool="${WHENTHEN_BACKUP_TOOL:-}"
  if [[ -z "$tool" ]]; then
    if command -v sqlite3 >/dev/null 2>&1; then tool=sqlite3; else tool=node; fi
  fi
  case "$tool" in
    sqlite3) command -v sqlite3 >/dev/null 2>&1 || die "WHENTHEN_BACKUP_TOOL=sqlite3 but no sqlite3 on PATH" ;;
    node) [[ -x "$ROOT/node_modules/.bin/tsx" ]] || die "no sqlite3 CLI and no $ROOT/node_modules/.bin/tsx: run pnpm install or install sqlite3" ;;
    *) die "WHENTHEN_BACKUP_TOOL must be sqlite3 or node, got \"$tool\"" ;;
  esac
  TOOL="$tool"
}

# Copies $1 (live database) to $2 as one snapshot, makes the copy a standalone rollback-journal
# file (a restore is then one file, no -wal to carry along) and checks it.
copy_and_check() {
  local src="$1" dst="$2"
  if [[ "$TOOL" == sqlite3 ]]; then
    # Dot-command arguments cannot escape a single quote; refuse instead of mangling the path.
    [[ "$dst" != *"'"* ]] || die "backup path must not contain a single quote: $dst"
    # BEGIN + a read pins the snapshot: every backup step then reads the same version of the file.
    sqlite3 -bail "$src" ".timeout 10000" "BEGIN" "SELECT count(*) FROM sqlite_schema;" ".backup '$dst'" "COMMIT" >/dev/null \
      || die "sqlite3 .backup of $src failed"
    sqlite3 -bail "$dst" "PRAGMA journal_mode = DELETE;" >/dev/null || die "could not switch $dst to journal_mode=DELETE"
    check_file "$dst"
  else
    (cd "$ROOT" && node_modules/.bin/tsx scripts/backup.ts "$src" "$dst") || die "backup through better-sqlite3 failed"
  fi
}

# Dies unless PRAGMA integrity_check on the (not live) database file $1 says "ok".
check_file() {
  local file="$1" check
  if [[ "$TOOL" == sqlite3 ]]; then
    check="$(sqlite3 -bail "$file" "PRAGMA integrity_check;" 2>&1)" || die "integrity_check could not run on $file: $check"
  else
    check="$(cd "$ROOT" && node_modules/.bin/tsx scripts/backup.ts --check "$file" 2>&1)" || die "integrity_check could not run on $file: $check"
  fi
  [[ "$check" == "ok" ]] || die "integrity_check of $file failed: $check"
}

prune() {
  local old ext="${1:-db}"
  # Only our own names: a file the user dropped in backups/ is never deleted.
  mapfile -t old < <(find "$BACKUP_DIR" -maxdepth 1 -type f -printf '%f\n' | grep -E "^[0-9]{8}T[0-9]{6}Z\\.$ext\$" | sort -r | tail -n +"$((KEEP + 1))")
  for name in "${old[@]}"; do
    rm -f -- "$BACKUP_DIR/$name"
    log "pruned $name"
  done
}

# PostgreSQL: pg_dump -Fc of the whole database (the app's tables, the schedules table, the
# migrations record), checked with pg_restore --list.
backup_postgres() {
  command -v pg_dump >/dev/null 2>&1 || die "DATABASE_URL is PostgreSQL but pg_dump is not installed (apt-get install -y postgresql-client)"
  mkdir -p "$BACKUP_DIR"
  local stamp out partial
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  out="$BACKUP_DIR/$stamp.dump"
  [[ ! -e "$out" ]] || die "$out already exists (two backups in the same second?)"
  partial="$BACKUP_DIR/.$stamp.dump.partial"
  pg_dump --format=custom --no-owner --file="$partial" "$PG_URL" || { rm -f -- "$partial"; die "pg_dump failed"; }
  # The listing is read whole before grep looks at it: `pg_restore | grep -q` under pipefail fails
  # with SIGPIPE as soon as the match comes before the end of the listing (more tables after runs).
  local listing
  listing="$(pg_restore --list "$partial")" || { rm -f -- "$partial"; die "pg_restore --list could not read $partial"; }
  grep -q "TABLE DATA .* runs " <<<"$listing" || { rm -f -- "$partial"; die "the dump $partial has no runs table: is DATABASE_URL the whenthen database?"; }
  mv -- "$partial" "$out"
  log "wrote $out ($(stat -c %s "$out") bytes, pg_restore --list ok, via pg_dump)"
  prune dump
}

backup_once() {
  resolve_paths
  if [[ -n "${PG_URL:-}" ]]; then
    backup_postgres
    return
  fi
  pick_tool
  [[ -f "$DB" ]] || die "no database at $DB (has the app started once? is DATA_DIR/DATABASE_URL right?)"
  mkdir -p "$BACKUP_DIR"
  local stamp out partial
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  out="$BACKUP_DIR/$stamp.db"
  [[ ! -e "$out" ]] || die "$out already exists (two backups in the same second?)"
  # Written under a name prune and restore ignore, renamed only once it passed the check.
  partial="$BACKUP_DIR/.$stamp.db.partial"
  rm -f -- "$partial" "$partial-journal" "$partial-wal" "$partial-shm"
  copy_and_check "$DB" "$partial"
  mv -- "$partial" "$out"
  log "wrote $out ($(stat -c %s "$out") bytes, integrity ok, via $TOOL)"
  prune
}

seconds_until() {
  local at="$1" now next
  now="$(date -u +%s)"
  next="$(date -u -d "today $at" +%s)" || die "BACKUP_AT must be HH:MM (UTC), got \"$at\""
  if ((next <= now)); then next="$(date -u -d "tomorrow $at" +%s)"; fi
  echo $((next - now))
}

daily() {
  local at="${BACKUP_AT:-03:00}"
  [[ "$at" =~ ^([01][0-9]|2[0-3]):[0-5][0-9]$ ]] || die "BACKUP_AT must be HH:MM (UTC), got \"$at\""
  # sleep runs in the background so SIGTERM (docker stop) ends the loop at once, not after the sleep.
  trap 'log "stopping"; exit 0' TERM INT
  while true; do
    local wait_s
    wait_s="$(seconds_until "$at")"
    log "next backup at $at UTC, in ${wait_s}s"
    sleep "$wait_s" &
    wait $!
    # A failed night is logged loudly and retried the next night; the loop itself keeps running.
    (backup_once) || echo "backup: ERROR: nightly backup failed; see above" >&2
  done
}

# Sourced by scripts/restore.sh for the path rules and the check; run only when executed.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    "") backup_once ;;
    --daily) daily ;;
    -h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
    *) die "unknown argument \"$1\" (use no argument, --daily or --help)" ;;
  esac
fi
