#!/usr/bin/env bash
# Restores the whenthen database from one backup file.
#
#   bash scripts/restore.sh <backup file> [--force]
#
# Stop the app and the worker first. The script:
#   1. checks the backup with PRAGMA integrity_check (refuses a damaged file);
#   2. refuses while a process on this machine has the database open, or while the worker's
#      heartbeat in the database is younger than 90 s (a worker in another container still
#      running); --force skips this check only;
#   3. moves the current database and its -wal/-shm aside to <db>.pre-restore-<UTC timestamp>
#      (with -wal/-shm suffixes, so SQLite still finds them if you open that copy), never deleting it;
#   4. copies the backup to <db>.restoring and renames it over <db>, so the app never sees half a file.
# Then start the app and the worker; migrations bring an older backup up to date on open.
#
# Paths follow lib/core/config.ts (DATA_DIR, DATABASE_URL), exactly like scripts/backup.sh.
set -euo pipefail

LOG_NAME=restore
# shellcheck source=scripts/backup.sh
source "$(dirname "${BASH_SOURCE[0]}")/backup.sh"

SOURCE=""
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h | --help)
      sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*) die "unknown option \"$arg\"" ;;
    *)
      [[ -z "$SOURCE" ]] || die "give one backup file, got \"$SOURCE\" and \"$arg\""
      SOURCE="$arg"
      ;;
  esac
done
[[ -n "$SOURCE" ]] || die "usage: scripts/restore.sh <backup file> [--force]"
[[ -f "$SOURCE" ]] || die "no backup file at $SOURCE"
SOURCE="$(realpath -- "$SOURCE")"

resolve_paths
pick_tool
[[ "$SOURCE" != "$DB" ]] || die "the backup file is the live database itself"

check_file "$SOURCE"

# Pids of processes (this machine, this pid namespace) with the database or its WAL open.
holders() {
  local fd target
  for fd in /proc/[0-9]*/fd/*; do
    target="$(readlink "$fd" 2>/dev/null)" || continue
    if [[ "$target" == "$DB" || "$target" == "$DB-wal" || "$target" == "$DB-shm" ]]; then
      fd="${fd#/proc/}"
      echo "${fd%%/*}"
    fi
  done | sort -u
}

if [[ -f "$DB" && "$FORCE" -eq 0 ]]; then
  pids="$(holders | tr '\n' ' ')"
  [[ -z "${pids// /}" ]] || die "the database is open by pid(s) $pids: stop the app and the worker first (or --force)"
  if [[ "$TOOL" == sqlite3 ]]; then
    # The app and worker may run in other containers, invisible to /proc here; their heartbeat is not.
    beat="$(sqlite3 -readonly "$DB" "SELECT COALESCE(last_run_at, '') FROM job_locks WHERE name = 'worker_heartbeat';" 2>/dev/null || true)"
    if [[ -n "$beat" ]]; then
      age=$(($(date -u +%s) - $(date -u -d "$beat" +%s 2>/dev/null || echo 0)))
      ((age >= 90)) || die "the worker wrote a heartbeat ${age}s ago ($beat): stop the app and the worker first (or --force)"
    fi
  fi
fi

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
if [[ -f "$DB" ]]; then
  aside="$DB.pre-restore-$stamp"
  mv -- "$DB" "$aside"
  for suffix in -wal -shm; do
    if [[ -e "$DB$suffix" ]]; then mv -- "$DB$suffix" "$aside$suffix"; fi
  done
  log "moved the current database aside to $aside"
else
  # No database, but a stale -wal/-shm would be replayed into the restored file: move them too.
  for suffix in -wal -shm; do
    if [[ -e "$DB$suffix" ]]; then mv -- "$DB$suffix" "$DB.stale-$stamp$suffix"; fi
  done
fi

mkdir -p "$(dirname "$DB")"
cp -- "$SOURCE" "$DB.restoring"
mv -- "$DB.restoring" "$DB"
log "restored $SOURCE to $DB; start the app and the worker now"
