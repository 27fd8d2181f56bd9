// The session tools of `lazyagent-oci mcp` driven by the official MCP
// TypeScript SDK's client: an agent opens a session on the demo seed, runs
// the failing tests, writes the fix, runs them again, diffs, proves, and
// closes, with a reconnect (a new server process) in the middle; the shell
// keeps its state between calls, no container is left, and a seed outside
// mcp.seeds is refused.
//   node session_client_test.mjs BINARY SOURCE_DIR   (run by run_client.sh)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [binary, source] = process.argv.slice(2);
let failures = 0;
function check(ok, what, detail) {
  console.log(`${ok ? "ok" : "not ok"} - ${what}${ok || detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 2000)}`}`);
  if (!ok) failures++;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lazyagent-mcp-session-"));
const seeds = path.join(tmp, "seeds");
const seed = path.join(seeds, "demo");
fs.mkdirSync(seed, { recursive: true });
for (const f of ["calculator.py", "test_calculator.py"]) fs.copyFileSync(path.join(source, "seed", f), path.join(seed, f));
const outside = path.join(tmp, "outside");
fs.mkdirSync(outside);
fs.copyFileSync(path.join(source, "seed", "calculator.py"), path.join(outside, "calculator.py"));
const config = path.join(tmp, "lazyagent.yaml");
const env = { ...process.env, XDG_STATE_HOME: path.join(tmp, "state") };
// signing.key in the server's config: session_prove signs its verdict.
const key = JSON.parse(execFileSync(binary, ["keygen", "--out", path.join(tmp, "keys"), "--json"], { env, encoding: "utf8" }));
fs.writeFileSync(config, fs.readFileSync(path.join(source, "config", "lazyagent.yaml"), "utf8") +
  `\nmcp:\n  seeds: [${JSON.stringify(seeds)}]\nsigning:\n  key: ${JSON.stringify(key.private_key)}\n`);
const calculator = fs.readFileSync(path.join(seed, "calculator.py"), "utf8");

// Per-command containers (lazyagent-sandbox-ID-N) and the live sandbox (lazyagent-session-ID).
function sessionContainers(id) {
  const out = execFileSync("podman", ["ps", "-a", "--filter", `name=lazyagent-sandbox-${id}`,
    "--filter", `name=lazyagent-session-${id}`, "--format", "{{.Names}}"], { encoding: "utf8" });
  return out.split("\n").filter(Boolean);
}

async function connect() {
  const transport = new StdioClientTransport({ command: binary, args: ["mcp", "--config", config], env, stderr: "pipe" });
  const client = new Client({ name: "lazyagent-oci-session-it", version: "1.0.0" });
  transport.stderr?.on("data", (d) => { serverLog += d.toString(); });
  await client.connect(transport);
  return client;
}

async function call(client, name, args, opts = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 300000, ...opts });
}

let serverLog = "";
let id = null;
try {
  let client = await connect();
  const { tools } = await client.listTools();
  const exec = tools.find((t) => t.name === "session_exec");
  check(JSON.stringify(exec?.inputSchema?.required) === JSON.stringify(["session_id", "command"]), "tools/list: session_exec requires session_id and command", exec);

  const refused = await call(client, "session_open", { seed: outside }).catch((e) => e);
  check(refused?.code === -32602 && /mcp.seeds/.test(refused?.message), "session_open: a seed outside mcp.seeds is refused", refused?.message);

  const progress = [];
  const opened = await call(client, "session_open", { seed }, { onprogress: (p) => progress.push(p.message) });
  id = opened.structuredContent?.session_id;
  check(opened.isError === false && /^s-/.test(id ?? ""), "session_open: a session id", opened.structuredContent);
  check(progress.length > 0, "session_open: progress notifications", progress);

  const failing = await call(client, "session_exec", { session_id: id, command: "python3 -m unittest" });
  check(failing.structuredContent?.exit_code === 1 && /FAILED/.test(failing.structuredContent?.output) &&
    failing.structuredContent?.truncated === false && failing.structuredContent?.timed_out === false,
    "session_exec: the failing tests fail", failing.structuredContent);
  // A live session (the default): one sandbox, kept between commands, with
  // the shell's state: a cd carries over to the next call.
  check(failing.structuredContent?.isolation === "live", "session_exec: a live session", failing.structuredContent);
  check(sessionContainers(id).length === 1, "session_exec: the session's one sandbox", sessionContainers(id));
  await call(client, "session_exec", { session_id: id, command: "mkdir -p .lazyagent-tmp/here && cd .lazyagent-tmp/here" });
  const where = await call(client, "session_exec", { session_id: id, command: "pwd" });
  check(where.structuredContent?.output === "/work/.lazyagent-tmp/here\n", "session_exec: cd carries over", where.structuredContent);
  await call(client, "session_exec", { session_id: id, command: "cd /work" });
  // Output streams as progress while the command runs: its first line is
  // seen alone, before the second is printed and before the answer.
  const streamed = [];
  const t0 = Date.now();
  const slow = await call(client, "session_exec", { session_id: id, command: "echo first-line; sleep 2; echo second-line" },
    { onprogress: (p) => streamed.push({ ms: Date.now() - t0, message: p.message }) });
  const alone = streamed.find((p) => /first-line/.test(p.message) && !/second-line/.test(p.message));
  // (Not the last notification: the SDK runs notification handlers a tick
  // late and drops one that comes in the same read as the answer.)
  check(slow.structuredContent?.output === "first-line\nsecond-line\n" && alone !== undefined && alone.ms < 1800 &&
    alone.ms < slow.structuredContent?.ms,
    "session_exec: output streams as notifications/progress while the command runs", { streamed, result: slow.structuredContent });

  // A reconnect: the session is in the run store, not in the server.
  await client.close();
  client = await connect();
  const fix = calculator.replace("return a - b", "return a + b");
  const wrote = await call(client, "session_write_file", { session_id: id, path: "calculator.py", content: fix });
  check(wrote.isError === false && wrote.structuredContent?.bytes === Buffer.byteLength(fix), "session_write_file after a reconnect", wrote.structuredContent);
  const outsideAllow = await call(client, "session_write_file", { session_id: id, path: "test_calculator.py", content: "x" }).catch((e) => e);
  check(outsideAllow?.code === -32602 && /allow list/.test(outsideAllow?.message), "session_write_file: a path off the allow list is refused", outsideAllow?.message);
  const read = await call(client, "session_read_file", { session_id: id, path: "calculator.py" });
  check(read.structuredContent?.content === fix, "session_read_file: what was written");

  const passing = await call(client, "session_exec", { session_id: id, command: "python3 -m unittest", timeout_seconds: 60 });
  check(passing.structuredContent?.exit_code === 0, "session_exec: the tests pass after the fix", passing.structuredContent);

  const diff = await call(client, "session_diff", { session_id: id });
  check(diff.structuredContent?.ok === true && /\+    return a \+ b/.test(diff.structuredContent?.diff) &&
    JSON.stringify(diff.structuredContent?.changed_paths) === JSON.stringify(["calculator.py"]), "session_diff: the fix as a diff", diff.structuredContent);

  const proved = await call(client, "session_prove", { session_id: id });
  const r = proved.structuredContent;
  check(proved.isError === false && r?.tests_passed === true && r?.patch_format === "diff", "session_prove: the ordinary test passes", r);
  check(r?.triage?.fixed?.length > 0, "session_prove: the baseline ran and the triage names what it fixed", r?.triage);
  // Signed: the envelope verifies offline against the session's diff and the seed.
  const diffFile = path.join(tmp, "session.diff");
  fs.writeFileSync(diffFile, diff.structuredContent?.diff ?? "");
  let verified = null;
  try {
    verified = JSON.parse(execFileSync(binary, ["verify", "--key", key.public_key, r?.attestation?.path ?? "-", "--patch", diffFile,
      "--seed", seed, "--require-passed", "--json"], { env, encoding: "utf8" }));
  } catch (e) {
    verified = { status: e.status, out: String(e.stdout), err: String(e.stderr) };
  }
  check(r?.attestation?.keyid === key.keyid && verified?.verified === true && verified?.checked?.patch === true,
    "session_prove: the verdict is signed and verifies against the diff and the seed", { attestation: r?.attestation, verified });

  const closed = await call(client, "session_close", { session_id: id });
  check(closed.structuredContent?.closed === true, "session_close", closed.structuredContent);
  check(sessionContainers(id).length === 0, "session_close: no container left");
  const gone = await call(client, "session_exec", { session_id: id, command: "true" }).catch((e) => e);
  check(gone?.code === -32602 && /no open session/.test(gone?.message), "session_exec after close: refused", gone?.message);
  await client.close();
} catch (e) {
  check(false, "the session scenario ran", String(e?.stack ?? e));
}
if (id) {
  try { execFileSync(binary, ["session", "close", id], { env, stdio: "ignore" }); } catch { /* closed */ }
}
fs.rmSync(tmp, { recursive: true, force: true });
if (failures > 0) {
  console.log(`--- server stderr ---\n${serverLog.slice(-6000)}`);
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("all checks passed");
