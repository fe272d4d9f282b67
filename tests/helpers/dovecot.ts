import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { freePort } from "./processes";
import { ImapFlow } from "imapflow";
import path from "node:path";

/**
 * A private Dovecot (Debian's dovecot-imapd) for the IMAP trigger's tests: its own config, a
 * passwd-file user and a Maildir under a temp dir, listening on a free port of 127.0.0.1, started
 * in the foreground so the test owns the process. As root it drops to an unprivileged user for
 * mail and its own processes (`mail_uid`, `default_internal_user`, `default_login_user`); as
 * anyone else it runs as that user. Absent binary: `noDovecot` says why and the tests skip.
 */

export const DOVECOT_BIN = process.env.DOVECOT_BIN || "/usr/sbin/dovecot";
export const noDovecot = existsSync(DOVECOT_BIN) ? null : `${DOVECOT_BIN} is missing (apt-get install dovecot-imapd): IMAP tests against a real server skipped`;

export interface Dovecot {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Puts a message into a mailbox as a delivery would (IMAP APPEND, from a connection of its own). */
  deliver(raw: string, mailbox?: string): Promise<void>;
  /** The flags of every message of a mailbox, by UID. */
  flags(mailbox?: string): Promise<Map<number, string[]>>;
  /** The server's log so far (for a failing test's message). */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/** Who the server runs as: an unprivileged account when we are root, else ourselves. */
function account(): { user: string; group: string; uid: number; gid: number } {
  const me = os.userInfo();
  if (me.uid !== 0) return { user: me.username, group: execFileSync("id", ["-gn"]).toString().trim(), uid: me.uid, gid: me.gid };
  for (const [user, group] of [["dovenull", "dovenull"], ["nobody", "nogroup"]] as const) {
    try {
      const uid = Number(execFileSync("id", ["-u", user]).toString());
      const gid = Number(execFileSync("getent", ["group", group]).toString().split(":")[2]);
      return { user, group, uid, gid };
    } catch {
      // not on this system; try the next one
    }
  }
  throw new Error("dovecot helper: no unprivileged account (dovenull or nobody) to run as");
}

export async function startDovecot(opts: { idle?: boolean; user?: string; password?: string } = {}): Promise<Dovecot> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "whenthen-dovecot-"));
  const port = await freePort();
  const user = opts.user ?? "ada";
  const password = opts.password ?? "s3cret-imap-password";
  const who = account();
  const home = path.join(dir, "home");
  await mkdir(path.join(home, user, "Maildir"), { recursive: true });
  await mkdir(path.join(dir, "run"), { recursive: true });
  await mkdir(path.join(dir, "state"), { recursive: true });
  await writeFile(path.join(dir, "passwd"), `${user}:{PLAIN}${password}:${who.uid}:${who.gid}::${path.join(home, user)}::\n`);
  // The base dir must be traversable by the login and internal users; the mail by the mail user.
  await chmod(dir, 0o755);
  if (os.userInfo().uid === 0) {
    for (const p of [home, path.join(home, user), path.join(home, user, "Maildir")]) await chown(p, who.uid, who.gid);
  }
  const capability = opts.idle === false
    ? // What Dovecot 2.3 announces after login, without IDLE: a server that must be polled.
      "imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ UIDPLUS MOVE NAMESPACE CHILDREN UNSELECT ESEARCH SEARCHRES SORT SPECIAL-USE STATUS=SIZE\n"
    : "";
  const config = `
base_dir = ${path.join(dir, "run")}
state_dir = ${path.join(dir, "state")}
log_path = ${path.join(dir, "dovecot.log")}
info_log_path = ${path.join(dir, "dovecot.log")}
instance_name = whenthen-test-${port}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# A refused login answers at once (the default waits 2 s): the wrong-password test makes several.
auth_failure_delay = 0
default_internal_user = ${who.user}
default_internal_group = ${who.group}
default_login_user = ${who.user}
mail_uid = ${who.uid}
mail_gid = ${who.gid}
first_valid_uid = ${Math.min(who.uid, 1)}
first_valid_gid = 0
mail_location = maildir:~/Maildir
mail_plugins =
${capability}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${path.join(dir, "passwd")}
}
userdb {
  driver = passwd-file
  args = username_format=%u ${path.join(dir, "passwd")}
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Archive {
    auto = create
    special_use = \\Archive
  }
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service pop3-login {
  inet_listener pop3 {
    port = 0
  }
}
service submission-login {
  inet_listener submission {
    port = 0
  }
}
service lmtp {
  unix_listener lmtp {
    mode = 0600
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
`;
  const conf = path.join(dir, "dovecot.conf");
  await writeFile(conf, config);
  const child: ChildProcess = spawn(DOVECOT_BIN, ["-F", "-c", conf], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const log = async () => `${output}${await readFile(path.join(dir, "dovecot.log"), "utf8").catch(() => "")}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dovecot exited at start: ${await log()}`);
    if (await greets(port)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`dovecot did not answer on port ${port}: ${await log()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const client = async <T>(fn: (c: ImapFlow) => Promise<T>): Promise<T> => {
    const c = new ImapFlow({ host: "127.0.0.1", port, secure: false, auth: { user, pass: password }, logger: false });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.logout().catch(() => c.close());
    }
  };
  return {
    host: "127.0.0.1",
    port,
    user,
    password,
    log,
    deliver: (raw, mailbox = "INBOX") => client(async (c) => void (await c.append(mailbox, raw.replace(/\r?\n/g, "\r\n")))),
    flags: (mailbox = "INBOX") =>
      client(async (c) => {
        const out = new Map<number, string[]>();
        const lock = await c.getMailboxLock(mailbox);
        try {
          for await (const m of c.fetch("1:*", { uid: true, flags: true })) out.set(m.uid, [...(m.flags ?? [])]);
        } catch {
          // an empty mailbox has no 1:*
        } finally {
          lock.release();
        }
        return out;
      }),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Whether an IMAP greeting comes from the port. */
function greets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.setTimeout(1000);
    socket.once("data", (d) => {
      socket.destroy();
      resolve(d.toString().startsWith("* OK"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
