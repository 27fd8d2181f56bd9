// `lazyagent-oci mcp` driven by a client no one here wrote: the official MCP
// TypeScript SDK's Client over its StdioClientTransport (the version pinned in
// package.json / package-lock.json). Run by ctest through run_client.sh:
//   node client_test.mjs BINARY SOURCE_DIR
// Each check prints "ok - ..." or "not ok - ..."; any failure exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [binary, source] = process.argv.slice(2);
let failures = 0;
function check(ok, what, detail) {
  console.log(`${ok ? "ok" : "not ok"} - ${what}${ok || detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 2000)}`}`);
  if (!ok) failures++;
}

// A private state dir, a seeds directory holding a copy of the demo seed, and
// the repo's config with mcp.seeds naming that directory.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lazyagent-mcp-"));
const seeds = path.join(tmp, "seeds");
const seed = path.join(seeds, "demo");
fs.mkdirSync(seed, { recursive: true });
for (const f of ["calculator.py", "test_calculator.py"]) fs.copyFileSync(path.join(source, "seed", f), path.join(seed, f));
const outside = path.join(tmp, "outside");
fs.mkdirSync(outside);
fs.copyFileSync(path.join(source, "seed", "calculator.py"), path.join(outside, "calculator.py"));
// The provider secrets renamed (never the names a real provider may be
// stored under), as scripts/lib.sh demo_config does.
const prefix = `LAZYAGENT_MCP_IT_${process.pid}`;
const config = path.join(tmp, "lazyagent.yaml");
const env = { ...process.env, XDG_STATE_HOME: path.join(tmp, "state") };
// A signing key the config names (signing.key): every verdict the tools make is signed.
const key = JSON.parse(execFileSync(binary, ["keygen", "--out", path.join(tmp, "keys"), "--json"], { env, encoding: "utf8" }));
fs.writeFileSync(config, fs.readFileSync(path.join(source, "config", "lazyagent.yaml"), "utf8")
  .replace(/CODING_AGENT_(BASE_URL|MODEL|API_KEY)/g, `${prefix}_$1`) + `\nmcp:\n  seeds: [${JSON.stringify(seeds)}]\n` +
  `signing:\n  key: ${JSON.stringify(key.private_key)}\n`);

// `lazyagent-oci verify --key` on a tool result's attestation: {code, verdict}.
function verifyAttestation(result, extra = []) {
  const file = result?.attestation?.path;
  if (!file) return { code: -1, verdict: null };
  try {
    const out = execFileSync(binary, ["verify", "--key", key.public_key, file, "--seed", seed, "--json", ...extra], { env, encoding: "utf8" });
    return { code: 0, verdict: JSON.parse(out) };
  } catch (e) {
    return { code: e.status, verdict: e.stdout ? JSON.parse(e.stdout) : null };
  }
}
function statementOf(result) {
  const envelope = JSON.parse(fs.readFileSync(result.attestation.path, "utf8"));
  return JSON.parse(Buffer.from(envelope.payload, "base64").toString("utf8"));
}

// The bundled scripted provider (the demo's script) for run_task, reached by
// the planner container at host.containers.internal; podman secrets made by
// the real `configure`.
const demoScript = path.join(source, "examples", "provider-stub", "demo-script.json");
const stub = spawn(binary, ["provider-stub", "--script", demoScript, "--listen", "0.0.0.0:0"], { stdio: ["ignore", "pipe", "pipe"] });
const stubPort = await new Promise((resolve, reject) => {
  let out = "";
  stub.stdout.on("data", (d) => {
    out += d.toString();
    const m = /listening on http:\/\/[^:]*:(\d+)\/v1/.exec(out);
    if (m) resolve(m[1]);
  });
  setTimeout(() => reject(new Error("the scripted provider did not start")), 10000);
});
execFileSync(binary, ["configure", "--config", config], {
  env: { ...env, [`${prefix}_BASE_URL`]: `http://host.containers.internal:${stubPort}/v1`, [`${prefix}_MODEL`]: "lazyagent-stub",
    [`${prefix}_API_KEY`]: JSON.parse(fs.readFileSync(demoScript, "utf8")).api_key },
  stdio: ["ignore", "ignore", "inherit"],
});

const calculator = fs.readFileSync(path.join(seed, "calculator.py"), "utf8");
const fixing = { files: [{ path: "calculator.py", content: calculator.replace("return a - b", "return a + b") }] };
const wrong = { files: [{ path: "calculator.py", content: calculator.replace("return a - b", "return a * b") }] };

function containersWithLabel(label) {
  const out = execFileSync("podman", ["ps", "-a", "--filter", `label=${label}`, "--format", "{{.ID}}"], { encoding: "utf8" });
  return out.split("\n").filter(Boolean);
}

async function rpcError(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return e;
  }
}

const transport = new StdioClientTransport({ command: binary, args: ["mcp", "--config", config], env, stderr: "pipe" });
let serverLog = "";
transport.stderr?.on("data", (d) => { serverLog += d.toString(); });
const client = new Client({ name: "lazyagent-oci-it", version: "1.0.0" });
try {
  // 1. initialize (the SDK sends it and notifications/initialized in connect)
  await client.connect(transport);
  const info = client.getServerVersion();
  check(info?.name === "lazyagent-oci", "initialize: serverInfo names lazyagent-oci", info);
  check(client.getServerCapabilities()?.tools !== undefined, "initialize: the server has tools");
  const serverPid = transport.pid;
  await new Promise((res) => setTimeout(res, 100));
  console.log(`# server: ${(serverLog.match(/initialize from .*/) ?? ["?"])[0]}`);

  // 2. tools/list
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(["list_sandboxes", "run_task", "session_close", "session_diff", "session_exec",
    "session_open", "session_prove", "session_read_file", "session_write_file", "show_run", "show_task", "test_patch"]),
    "tools/list: the five tools and the seven session tools", names);
  const tp = tools.find((t) => t.name === "test_patch");
  check(JSON.stringify(tp?.inputSchema?.required) === JSON.stringify(["seed", "patch"]), "tools/list: test_patch requires seed and patch", tp);

  // 3. test_patch with a fixing patch: passes, with progress, resources, the sandbox gone
  const progress = [];
  const fixed = await client.callTool({ name: "test_patch", arguments: { seed, patch: fixing } }, undefined,
    { onprogress: (p) => progress.push(p.message), timeout: 300000 });
  const r = fixed.structuredContent;
  check(fixed.isError === false && r?.tests_passed === true && r?.test_exit_code === 0, "test_patch (fix): tests_passed", r);
  check(JSON.stringify(r?.changed_paths) === JSON.stringify(["calculator.py"]), "test_patch (fix): changed_paths", r?.changed_paths);
  check(r?.triage?.fixed?.length > 0, "test_patch (fix): the baseline ran and the triage names what it fixed", r?.triage);
  check(r?.resources?.available === true && r.resources.cpu_ms >= 0 && r.resources.memory_peak_bytes > 0,
    "test_patch (fix): resources measured", r?.resources);
  check(progress.some((m) => m === `run ${r?.run_id}: run`), "test_patch (fix): progress notifications named the run's steps", progress);
  check(JSON.parse(fixed.content[0].text).run_id === r?.run_id, "test_patch (fix): the text content is the same result");
  check(containersWithLabel(`io.lazyagent.run=${r?.run_id}`).length === 0, "test_patch (fix): no container left");
  // Signed (signing.key in the server's config): the envelope verifies offline, PASSED.
  check(r?.attestation?.keyid === key.keyid, "test_patch (fix): the result points to its signed verdict", r?.attestation);
  const fixVerified = verifyAttestation(r, ["--require-passed"]);
  check(fixVerified.code === 0 && fixVerified.verdict?.verified === true, "test_patch (fix): the attestation verifies with verify --key", fixVerified);
  check(r?.attestation && statementOf(r).predicate?.run?.id === r.run_id, "test_patch (fix): the statement names the run");

  // 4. a wrong patch: a result (not an error) that did not pass
  const bad = await client.callTool({ name: "test_patch", arguments: { seed, patch: wrong, baseline: false } }, undefined, { timeout: 300000 });
  check(bad.isError === false && bad.structuredContent?.tests_passed === false && bad.structuredContent?.test_exit_code !== 0,
    "test_patch (wrong): tests_passed false", bad.structuredContent);
  const badVerified = verifyAttestation(bad.structuredContent);
  check(badVerified.code === 0 && statementOf(bad.structuredContent).predicate?.result === "FAILED",
    "test_patch (wrong): signed FAILED, and it verifies", badVerified);
  const notPassed = verifyAttestation(bad.structuredContent, ["--require-passed"]);
  check(notPassed.code === 1 && notPassed.verdict?.findings?.[0]?.part === "result", "test_patch (wrong): --require-passed refuses it", notPassed);

  // 5. show_run of the fixing run; list_sandboxes
  const shown = await client.callTool({ name: "show_run", arguments: { run_id: r.run_id } });
  check(shown.structuredContent?.status === "passed" && shown.structuredContent?.kind === "test", "show_run: the record", shown.structuredContent);
  const listed = await client.callTool({ name: "list_sandboxes", arguments: { limit: 10 } });
  check(listed.structuredContent?.sandboxes?.some((s) => s.run_id === r.run_id && s.exists === false),
    "list_sandboxes: the run, its container gone", listed.structuredContent);

  // 6. a refused seed: a JSON-RPC error naming the reason, and nothing ran
  const before = (await client.callTool({ name: "list_sandboxes", arguments: {} })).structuredContent.sandboxes.length;
  const refused = await rpcError(client.callTool({ name: "test_patch", arguments: { seed: outside, patch: fixing } }));
  check(refused?.code === -32602 && /refused: it is not under a directory the server's mcp.seeds lists/.test(refused?.message),
    "refused seed: -32602 naming mcp.seeds", refused && { code: refused.code, message: refused.message });
  const escape = await rpcError(client.callTool({ name: "test_patch", arguments: { seed: `${seeds}/../outside`, patch: fixing } }));
  check(escape?.code === -32602 && /refused/.test(escape?.message), "refused seed: .. out of mcp.seeds", escape?.message);
  const after = (await client.callTool({ name: "list_sandboxes", arguments: {} })).structuredContent.sandboxes.length;
  check(after === before, "refused seed: no run was recorded", { before, after });

  // 7. malformed calls: the CLI's own checks, every problem named
  const types = await rpcError(client.callTool({ name: "test_patch", arguments: { seed: 5, patch: 7, colour: "red" } }));
  check(types?.code === -32602 && /arguments.colour: unknown argument/.test(types.message) &&
    /arguments.seed: expected a string, got 5/.test(types.message) && /arguments.patch: expected a unified diff/.test(types.message),
    "malformed call: every argument problem named", types?.message);
  const timeout = await rpcError(client.callTool({ name: "test_patch", arguments: { seed, patch: fixing, timeout_seconds: 0 } }));
  check(timeout?.code === -32602 && timeout.message.includes("test: --timeout: expected an integer between 1 and 86400, got '0'"),
    "malformed call: timeout checked as the CLI's --timeout", timeout?.message);
  const unknown = await rpcError(client.callTool({ name: "no_such_tool", arguments: {} }));
  check(unknown?.code === -32602 && /unknown tool 'no_such_tool'/.test(unknown.message), "malformed call: unknown tool", unknown?.message);
  // A patch text that is neither form: the contract refuses it, as `test` does (a result, status refused).
  const garbage = await client.callTool({ name: "test_patch", arguments: { seed, patch: "this is not a patch", baseline: false } });
  check(garbage.isError === false && garbage.structuredContent?.status === "refused" && garbage.structuredContent?.findings?.length > 0,
    "malformed patch text: refused by the contract, every finding named", garbage.structuredContent);
  check(garbage.structuredContent?.attestation === undefined || garbage.structuredContent?.attestation === null,
    "malformed patch text: a refusal is no verdict and is not signed", garbage.structuredContent?.attestation);

  // 8. run_task: the planner (the scripted provider) proposes, the sandbox proves; show_task reads its task
  // (An instruction that looks like flags stays an instruction: it cannot name another config or seed.)
  const ran = await client.callTool({ name: "run_task", arguments: { seed, instruction: "--config /etc/passwd --seed / Fix calculator.add." } },
    undefined, { timeout: 300000 });
  const rr = ran.structuredContent;
  check(ran.isError === false && rr?.tests_passed === true && /^t-/.test(rr?.planner_task_id ?? ""),
    "run_task: the planner's patch proven, tests_passed", rr && { tests_passed: rr.tests_passed, reason: rr.reason, planner_task_id: rr.planner_task_id });
  const runVerified = verifyAttestation(rr, ["--require-passed"]);
  check(rr?.attestation?.keyid === key.keyid && runVerified.code === 0, "run_task: the verdict is signed and verifies", { attestation: rr?.attestation, runVerified });
  const task = await client.callTool({ name: "show_task", arguments: { task_id: rr?.planner_task_id ?? "none" } });
  check(task.structuredContent?.task_id === rr?.planner_task_id && task.structuredContent?.model === "lazyagent-stub",
    "show_task: the planner task's record", task.structuredContent && { task_id: task.structuredContent.task_id, model: task.structuredContent.model });
  const badRun = await rpcError(client.callTool({ name: "run_task", arguments: { seed, attempts: 99 } }));
  check(badRun?.code === -32602 && badRun.message.includes("run: --attempts: expected an integer between 1 and 20, got '99'"),
    "run_task: attempts checked as the CLI's --attempts", badRun?.message);

  // 9. cancellation mid-run: the sandbox is removed, nothing left behind
  const abort = new AbortController();
  let runId = null;
  let runningAtAbort = [];
  const slow = { files: [{ path: "calculator.py", content: "import time\ntime.sleep(120)\n" + fixing.files[0].content }] };
  const started = Date.now();
  const cancelled = await rpcError(client.callTool({ name: "test_patch", arguments: { seed, patch: slow, baseline: false, timeout_seconds: 300 } },
    undefined, {
      timeout: 300000,
      signal: abort.signal,
      onprogress: (p) => {
        const m = /^run (r-\S+): run$/.exec(p.message ?? "");
        if (m && !runId) {
          runId = m[1];
          setTimeout(() => {  // the sandbox is running its tests (sleeping)
            runningAtAbort = containersWithLabel(`io.lazyagent.run=${runId}`);
            abort.abort("the test is done waiting");
          }, 1500);
        }
      },
    }));
  check(cancelled !== null && runId !== null, "cancellation: the call was aborted mid-run", { runId, error: String(cancelled) });
  check(runningAtAbort.length === 1, "cancellation: its sandbox existed when the client cancelled", runningAtAbort);
  let left = [];
  for (let i = 0; i < 60; i++) {  // the server stops the run and removes the sandbox
    left = containersWithLabel(`io.lazyagent.run=${runId}`).concat(containersWithLabel(`io.lazyagent.pid=${serverPid}`));
    if (left.length === 0) break;
    await new Promise((res) => setTimeout(res, 500));
  }
  check(left.length === 0, "cancellation: no container with the run's or the server's label", left);
  check(Date.now() - started < 60000, "cancellation: well before the test's 120 s sleep", Date.now() - started);
  // The server is free again and its record says what happened.
  let rec = null;
  for (let i = 0; i < 20; i++) {
    const e = await rpcError(client.callTool({ name: "show_run", arguments: { run_id: runId } }).then((x) => { rec = x.structuredContent; }));
    if (!e && rec?.status === "interrupted") break;
    await new Promise((res) => setTimeout(res, 500));
  }
  check(rec?.status === "interrupted", "cancellation: the run's record says interrupted", rec?.status);
  check(fs.readdirSync(path.join(tmp, "state", "lazyagent-oci", "work")).length === 0, "cancellation: no private copy left");
  const again = await client.callTool({ name: "test_patch", arguments: { seed, patch: fixing, baseline: false } }, undefined, { timeout: 300000 });
  check(again.structuredContent?.tests_passed === true, "after cancellation: the next call runs", again.structuredContent?.reason);
} catch (e) {
  check(false, "no exception", String(e?.stack ?? e));
} finally {
  await client.close();
}

// 10. The raw protocol, by hand: a line that is not JSON, an unknown method,
// and a clean exit (0) at end of input.
await new Promise((resolve) => {
  const p = spawn(binary, ["mcp", "--config", config], { env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (d) => { out += d.toString(); });
  p.stdin.write("this is not json\n");
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } }) + "\n");
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "no/such" }) + "\n");
  p.stdin.end();
  p.on("exit", (code) => {
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    check(lines[0]?.error?.code === -32700, "raw: a line that is not JSON is -32700", lines[0]);
    check(lines[1]?.id === 1 && lines[1]?.result?.protocolVersion === "2025-06-18", "raw: initialize answers 2025-06-18", lines[1]);
    check(lines[2]?.id === 2 && lines[2]?.error?.code === -32601 && lines[2].error.message === "method not found: no/such",
      "raw: an unknown method is -32601", lines[2]);
    check(code === 0, "raw: end of input is a clean exit 0", code);
    resolve();
  });
});

// 11. SIGTERM to the server mid-run: the run stops, its sandbox is removed, exit 143.
await new Promise((resolve) => {
  const p = spawn(binary, ["mcp", "--config", config], { env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let runId = null;
  let existed = [];
  p.stdout.on("data", (d) => {
    out += d.toString();
    const m = /"message":"run (r-[^ "]+): run"/.exec(out);
    if (m && !runId) {
      runId = m[1];
      setTimeout(() => { existed = containersWithLabel(`io.lazyagent.run=${runId}`); p.kill("SIGTERM"); }, 1500);
    }
  });
  const slow = { files: [{ path: "calculator.py", content: "import time\ntime.sleep(120)\n" + fixing.files[0].content }] };
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } }) + "\n");
  p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "test_patch", arguments: { seed, patch: slow, baseline: false }, _meta: { progressToken: 7 } } }) + "\n");
  p.on("exit", (code) => {
    check(runId !== null && existed.length === 1, "SIGTERM: the run's sandbox was running", { runId, existed });
    check(code === 143, "SIGTERM: the server exits 143", code);
    check(runId !== null && containersWithLabel(`io.lazyagent.run=${runId}`).length === 0, "SIGTERM: no container left");
    const answer = out.trim().split("\n").map((l) => JSON.parse(l)).find((m) => m.id === 2);
    check(answer?.result?.isError === true && answer.result.structuredContent?.error_kind === "interrupted",
      "SIGTERM: the call is answered as interrupted before the exit", answer);
    resolve();
  });
});

stub.kill();
for (const s of ["BASE_URL", "MODEL", "API_KEY"]) {
  try { execFileSync(binary, ["secret", "delete", `${prefix}_${s}`], { env, stdio: "ignore" }); } catch { /* already gone */ }
}
fs.rmSync(tmp, { recursive: true, force: true });
if (failures > 0) {
  console.log(`--- server stderr ---\n${serverLog.slice(-6000)}`);
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("all checks passed");
