// `lazyagent-oci mcp` while podman's service goes away and comes back (issue
// 44), driven by the official MCP TypeScript SDK's client: a tool call during
// the outage is a clear, retryable tool error (not a hang, not a dead server),
// the server keeps answering tools/list and the calls that only read the run
// store, and once the service answers again the same call works, with no
// restart of the server and no container left. A session's command that
// meets the outage waits for the service within its timeout and says so.
//
// The outage is a podman service of this test's own on a private socket
// (as tests/security/private_podman.h starts one: from /, runc, the machine's
// storage), stopped by its pid and started again; the shared service on
// /run/podman/podman.sock is never touched.
//   node outage_client_test.mjs BINARY SOURCE_DIR   (run by run_client.sh)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const [binary, source] = process.argv.slice(2);
let failures = 0;
function check(ok, what, detail) {
  console.log(`${ok ? "ok" : "not ok"} - ${what}${ok || detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 2000)}`}`);
  if (!ok) failures++;
}
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lazyagent-mcp-outage-"));
const seeds = path.join(tmp, "seeds");
const seed = path.join(seeds, "demo");
fs.mkdirSync(seed, { recursive: true });
for (const f of ["calculator.py", "test_calculator.py"]) fs.copyFileSync(path.join(source, "seed", f), path.join(seed, f));
const config = path.join(tmp, "lazyagent.yaml");
fs.writeFileSync(config, fs.readFileSync(path.join(source, "config", "lazyagent.yaml"), "utf8") +
  `\nmcp:\n  seeds: [${JSON.stringify(seeds)}]\n`);
const calculator = fs.readFileSync(path.join(seed, "calculator.py"), "utf8");
const fixing = { files: [{ path: "calculator.py", content: calculator.replace("return a - b", "return a + b") }] };

// The private podman service: started, stopped by its pid, started again.
const socket = `/run/lazyagent-mcp-outage-${process.pid}.sock`;
let service = null;
function answers() {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: socket, path: "/_ping", timeout: 2000 }, (res) => { res.resume(); resolve(res.statusCode === 200); });
    req.on("error", () => resolve(false));
    req.on("timeout", () => { req.destroy(); resolve(false); });
    req.end();
  });
}
async function startService() {
  fs.rmSync(socket, { force: true });
  service = spawn("podman", ["--runtime", "runc", "system", "service", "--time=0", `unix://${socket}`], { cwd: "/", stdio: "ignore" });
  for (let i = 0; i < 300; i++) {
    if (await answers()) return true;
    await sleep(100);
  }
  return false;
}
async function stopService() {
  if (!service || service.exitCode !== null) return;
  const gone = new Promise((res) => service.once("exit", res));
  service.kill("SIGTERM");
  const timer = setTimeout(() => service.kill("SIGKILL"), 10000);
  await gone;
  clearTimeout(timer);
}
function containersWithLabel(label) {
  const out = execFileSync("podman", ["ps", "-a", "--filter", `label=${label}`, "--format", "{{.ID}}"], { encoding: "utf8" });
  return out.split("\n").filter(Boolean);
}

const env = { ...process.env, XDG_STATE_HOME: path.join(tmp, "state"), CONTAINER_HOST: `unix://${socket}` };
let serverLog = "";
let client = null;
let sessionId = null;
try {
  check(await startService(), "the private podman service answers");
  const transport = new StdioClientTransport({ command: binary, args: ["mcp", "--config", config], env, stderr: "pipe" });
  transport.stderr?.on("data", (d) => { serverLog += d.toString(); });
  client = new Client({ name: "lazyagent-oci-outage-it", version: "1.0.0" });
  await client.connect(transport);
  const serverPid = transport.pid;

  // 1. The service goes away: test_patch is a retryable tool error naming it, at once.
  await stopService();
  const t0 = Date.now();
  const away = await client.callTool({ name: "test_patch", arguments: { seed, patch: fixing, baseline: false } }, undefined, { timeout: 120000 });
  const e = away.structuredContent;
  check(away.isError === true && e?.error_kind === "engine_unreachable" && e?.retryable === true,
    "during the outage: test_patch is an isError result, engine_unreachable, retryable", e);
  check(/cannot reach podman at .*lazyagent-mcp-outage-.*\.sock/.test(e?.error ?? ""), "during the outage: the error names podman's socket", e?.error);
  check(Date.now() - t0 < 30000, "during the outage: answered without waiting out a timeout", Date.now() - t0);
  check(JSON.parse(away.content?.[0]?.text ?? "{}").retryable === true, "during the outage: the text content says retryable too");

  // 2. The server keeps serving meanwhile.
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === "test_patch"), "during the outage: tools/list answers", tools.map((t) => t.name));
  const listed = await client.callTool({ name: "list_sandboxes", arguments: { limit: 5 } });
  check(listed.isError === false && Array.isArray(listed.structuredContent?.sandboxes), "during the outage: list_sandboxes (the run store) answers", listed.structuredContent);

  // 3. The service is back: the same call works, with no restart of the server.
  check(await startService(), "the private podman service answers again");
  const back = await client.callTool({ name: "test_patch", arguments: { seed, patch: fixing, baseline: false } }, undefined, { timeout: 300000 });
  check(back.isError === false && back.structuredContent?.tests_passed === true, "after the outage: the same test_patch passes", back.structuredContent);
  check(transport.pid === serverPid, "after the outage: the same server process");
  check(containersWithLabel(`io.lazyagent.pid=${serverPid}`).length === 0, "after the outage: no container of the server's left");

  // 4. A session's command meets an outage: it waits within its timeout_seconds,
  // says so in its progress, and answers once the service is back.
  const opened = await client.callTool({ name: "session_open", arguments: { seed } }, undefined, { timeout: 300000 });
  sessionId = opened.structuredContent?.session_id;
  check(/^s-/.test(sessionId ?? ""), "session_open", opened.structuredContent);
  await stopService();
  const progress = [];
  const pending = client.callTool({ name: "session_exec", arguments: { session_id: sessionId, command: "echo waited", timeout_seconds: 60 } },
    undefined, { timeout: 120000, onprogress: (p) => progress.push(p.message) });
  await sleep(2000);
  check(await startService(), "the private podman service answers after the session's outage");
  const exec = await pending;
  const x = exec.structuredContent;
  check(exec.isError === false && x?.exit_code === 0 && x?.output === "waited\n", "session_exec during the outage: waited, then ran", x);
  check(x?.engine_outages?.length === 1 && x.engine_outages[0].gave_up === false && x.engine_outages[0].ms >= 1000,
    "session_exec during the outage: the result lists the outage", x?.engine_outages);
  check(progress.some((m) => /podman unreachable since \d\d:\d\d:\d\d, waiting \(up to 60 s, the command's timeout\)/.test(m ?? "")) &&
    progress.some((m) => /podman answers again after/.test(m ?? "")), "session_exec during the outage: its progress said so", progress);
  const closed = await client.callTool({ name: "session_close", arguments: { session_id: sessionId } });
  check(closed.structuredContent?.closed === true, "session_close after the outage", closed.structuredContent);
  sessionId = null;
} catch (err) {
  check(false, "the outage scenario ran", String(err?.stack ?? err));
} finally {
  if (client) await client.close();
  if (sessionId) {
    try { execFileSync(binary, ["session", "close", sessionId], { env, stdio: "ignore" }); } catch { /* closed */ }
  }
  await stopService();
  fs.rmSync(socket, { force: true });
}
fs.rmSync(tmp, { recursive: true, force: true });
if (failures > 0) {
  console.log(`--- server stderr ---\n${serverLog.slice(-6000)}`);
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("all checks passed");
