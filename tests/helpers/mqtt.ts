import { spawn, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { freePort } from "./processes";
import path from "node:path";
import { connectAsync, type MqttClient } from "mqtt";

/** The broker the MQTT tests use (.ci/run sets it for the machine's Mosquitto); unset: they skip with this reason. */
export const TEST_MQTT_URL = process.env.TEST_MQTT_URL || "";
export const noMqtt = TEST_MQTT_URL ? null : "TEST_MQTT_URL is not set (e.g. mqtt://127.0.0.1:1883, the machine's Mosquitto): MQTT tests skipped";

const MOSQUITTO = "/usr/sbin/mosquitto";
export const noMosquittoBinary = existsSync(MOSQUITTO) && existsSync("/usr/bin/mosquitto_passwd") ? null : "mosquitto is not installed (apt-get install mosquitto): the broker-with-accounts test skipped";

/** A client of the test broker, for publishing and watching what the app publishes. */
export async function testClient(url = TEST_MQTT_URL, opts: { username?: string; password?: string } = {}): Promise<MqttClient> {
  return connectAsync(url, { clientId: `wt-t-${Math.random().toString(16).slice(2, 14)}`, clean: true, reconnectPeriod: 0, ...opts });
}

/** A topic prefix no other test (or engineer sharing the broker) publishes under. */
export const uniqueTopic = (name: string): string => `whenthen-test/${process.pid}-${Math.random().toString(36).slice(2, 10)}/${name}`;

/** A private Mosquitto on a free port that takes only `user` with `password` (no anonymous clients). */
export async function startMosquittoWithAccount(user: string, password: string): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "whenthen-mosquitto-"));
  await chmod(dir, 0o755);
  const port = await freePort();
  const passwd = path.join(dir, "passwd");
  execFileSync("/usr/bin/mosquitto_passwd", ["-b", "-c", passwd, user, password]);
  await chmod(passwd, 0o644);
  const conf = path.join(dir, "mosquitto.conf");
  await writeFile(conf, `listener ${port} 127.0.0.1\nallow_anonymous false\npassword_file ${passwd}\npersistence false\nlog_dest none\n`);
  const child = spawn(MOSQUITTO, ["-c", conf], { stdio: "ignore" });
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`mosquitto did not start on port ${port}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `mqtt://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
