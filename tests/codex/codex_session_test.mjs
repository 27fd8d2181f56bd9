// OpenAI's Codex CLI (`codex exec`, pinned in package-lock.json) works the
// demo bug to a proven fix through the session tools of `lazyagent-oci mcp`,
// its model a scripted Responses API server (responses_server.mjs) in this
// process: open a session, run the tests (they fail), read and write the
// file, run them again (they pass), start a server in the background and
// query it from the next command, diff, prove, close. Every tool result is
// checked by the script before the next call, so the test cannot pass unless
// Codex made each call. Then: the verdict, `verify` of its signed envelope,
// `diff` of the proven run, the seed untouched, no container or volume left.
//
// Runs in a network namespace with only lo (run_codex.sh: unshare --net), so
// nothing Codex or the server tries can leave the machine; podman is reached
// through its unix socket.
//   node codex_session_test.mjs CODEX_JS BINARY SOURCE_DIR WORK_DIR
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startScriptedModel } from "./responses_server.mjs";

const [codexJs, binary, source, workDir] = process.argv.slice(2);
const SERVER = "lazyagent";
const CLOSING = "The fix is proven and the session is closed.";
let failures = 0;
function check(ok, what, detail) {
  console.log(`${ok ? "ok" : "not ok"} - ${what}${ok || detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 3000)}`}`);
  if (!ok) failures++;
}

// Only lo, or the test could reach (and Codex look up) outside hosts.
const interfaces = Object.keys(os.networkInterfaces());
if (JSON.stringify(interfaces) !== '["lo"]') {
  console.log(`not ok - run in a network namespace with only lo (run_codex.sh does); interfaces here: ${interfaces.join(", ")}`);
  process.exit(1);
}

// Under the build directory, not /tmp: Codex will not put its helpers in a
// CODEX_HOME below a temporary directory, and says so.
const tmp = fs.mkdtempSync(path.join(workDir, "run-"));
const seeds = path.join(tmp, "seeds");
const seed = path.join(seeds, "demo");
fs.mkdirSync(seed, { recursive: true });
for (const f of ["calculator.py", "test_calculator.py"]) fs.copyFileSync(path.join(source, "seed", f), path.join(seed, f));
const state = path.join(tmp, "state");
const env = { ...process.env, XDG_STATE_HOME: state };
const key = JSON.parse(execFileSync(binary, ["keygen", "--out", path.join(tmp, "keys"), "--json"], { env, encoding: "utf8" }));
const config = path.join(tmp, "lazyagent.yaml");
fs.writeFileSync(config, fs.readFileSync(path.join(source, "config", "lazyagent.yaml"), "utf8") +
  `\nmcp:\n  seeds: [${JSON.stringify(seeds)}]\nsigning:\n  key: ${JSON.stringify(key.private_key)}\n`);

// Every file's path and content, in order: equal before and after, or the seed was touched.
function treeHash(dir) {
  const h = crypto.createHash("sha256");
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      h.update(`${path.relative(dir, p)}\0${e.isDirectory() ? "d" : e.isFile() ? "f" : "o"}\0`);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) h.update(fs.readFileSync(p));
    }
  };
  walk(dir);
  return h.digest("hex");
}
// Containers the project made ("ID NAME RUN" lines, RUN from its label) and every volume.
function podmanObjects() {
  const containers = execFileSync("podman", ["ps", "-a", "--filter", "label=io.lazyagent.role",
    "--format", '{{.ID}} {{.Names}} {{index .Labels "io.lazyagent.run"}}'], { encoding: "utf8" });
  const volumes = execFileSync("podman", ["volume", "ls", "--format", "{{.Name}}"], { encoding: "utf8" });
  return { containers: containers.split("\n").filter(Boolean), volumes: volumes.split("\n").filter(Boolean) };
}
// The session's id and every run in this test's private run store: a container
// naming one of them is this test's (another suite on the same podman service
// may make and remove its own meanwhile).
function ourIds(sessionId) {
  const runs = path.join(state, "lazyagent-oci", "runs");
  const ids = fs.existsSync(runs) ? fs.readdirSync(runs).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -".json".length)) : [];
  return sessionId ? [sessionId, ...ids] : ids;
}
const seedBefore = treeHash(seed);
const before = podmanObjects();

// What the scripted model does, and what it expects back from each call.
const unittest = "python3 -m unittest";
const query = "for i in 1 2 3 4 5 6 7 8 9 10; do python3 -c \"import urllib.request as u; " +
  "print(u.urlopen('http://127.0.0.1:8000/').status)\" 2>/dev/null && break; sleep 0.3; done";
const steps = [
  { name: "session_open", args: () => ({ seed }),
    expect: (r, text, s) => {
      if (!/^s-/.test(r?.session_id ?? "")) return `no session_id in ${text}`;
      s.id = r.session_id;
      return null;
    } },
  { name: "session_exec", args: (s) => ({ session_id: s.id, command: unittest }),
    expect: (r, text) => (r?.exit_code === 1 && /FAILED/.test(r?.output) ? null : `the tests did not fail: ${text}`) },
  { name: "session_read_file", args: (s) => ({ session_id: s.id, path: "calculator.py" }),
    expect: (r, text, s) => {
      if (!/return a - b/.test(r?.content ?? "")) return `not the seed's calculator.py: ${text}`;
      s.fix = r.content.replace("return a - b", "return a + b");
      return null;
    } },
  { name: "session_write_file", args: (s) => ({ session_id: s.id, path: "calculator.py", content: s.fix }),
    expect: (r, text, s) => (r?.bytes === Buffer.byteLength(s.fix) ? null : `not written: ${text}`) },
  { name: "session_exec", args: (s) => ({ session_id: s.id, command: unittest }),
    expect: (r, text) => (r?.exit_code === 0 && /\nOK/.test(r?.output) ? null : `the tests did not pass: ${text}`) },
  { name: "session_exec",
    args: (s) => ({ session_id: s.id, command: "python3 -m http.server 8000 --bind 127.0.0.1 >/tmp/server.log 2>&1 & echo started" }),
    expect: (r, text) => (r?.exit_code === 0 && r?.output === "started\n" ? null : `the server did not start: ${text}`) },
  { name: "session_exec", args: (s) => ({ session_id: s.id, command: query }),
    expect: (r, text) => (r?.exit_code === 0 && r?.output === "200\n" ? null : `the background server did not answer: ${text}`) },
  { name: "session_diff", args: (s) => ({ session_id: s.id }),
    expect: (r, text, s) => {
      if (r?.ok !== true || !/\+    return a \+ b/.test(r?.diff ?? "")) return `not the fix: ${text}`;
      s.diff = r.diff;
      return null;
    } },
  { name: "session_prove", args: (s) => ({ session_id: s.id }),
    expect: (r, text, s) => {
      s.prove = r;
      return r?.tests_passed === true ? null : `not proven: ${text}`;
    } },
  { name: "session_close", args: (s) => ({ session_id: s.id }),
    expect: (r, text) => (r?.closed === true ? null : `not closed: ${text}`) },
];

const model = await startScriptedModel({ namespace: `mcp__${SERVER}`, steps, closing: CLOSING });

// A private CODEX_HOME (and HOME): nothing of the machine's user is read or written.
const codexHome = path.join(tmp, "codex-home");
const home = path.join(tmp, "home");
const cwd = path.join(tmp, "cwd");
for (const d of [codexHome, home, cwd]) fs.mkdirSync(d);
const toml = (s) => JSON.stringify(s);  // a TOML basic string is a JSON string here
const serverEnv = { XDG_STATE_HOME: state, ...(process.env.CONTAINER_HOST ? { CONTAINER_HOST: process.env.CONTAINER_HOST } : {}) };
fs.writeFileSync(path.join(codexHome, "config.toml"), `model = "scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted Responses API server"
base_url = "http://127.0.0.1:${model.port}/v1"
env_key = "SCRIPTED_MODEL_API_KEY"
wire_api = "responses"

[features]
plugins = false
shell_snapshot = false

[analytics]
enabled = false

[mcp_servers.${SERVER}]
command = ${toml(binary)}
args = ["mcp", "--config", ${toml(config)}]
env = { ${Object.entries(serverEnv).map(([k, v]) => `${k} = ${toml(v)}`).join(", ")} }
default_tools_approval_mode = "approve"
tool_timeout_sec = 300
`);

const lastMessage = path.join(tmp, "last-message.txt");
const started = Date.now();
const codex = spawn(process.execPath, [codexJs, "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral", "--color", "never",
  "-C", cwd, "-o", lastMessage, "Fix calculator.add in the demo seed without changing its tests, and prove the fix."], {
  env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, SCRIPTED_MODEL_API_KEY: "not-a-real-key" },
  stdio: ["ignore", "pipe", "pipe"] });
let codexOut = "";
codex.stdout.on("data", (d) => { codexOut += d; });
codex.stderr.on("data", (d) => { codexOut += d; });
const timer = setTimeout(() => codex.kill("SIGKILL"), 240000);
const codexExit = await new Promise((resolve) => codex.on("close", (code, signal) => resolve(signal ?? code)));
clearTimeout(timer);
model.close();
console.log(`codex exec: exit ${codexExit} after ${((Date.now() - started) / 1000).toFixed(1)} s, ${model.transcript.length} tool calls`);

check(codexExit === 0, "codex exec exits 0", codexExit);
check(model.failures.length === 0, "every tool result was what the script expected", model.failures);
check(model.finishedScript() && model.transcript.every((t) => t.output !== null),
  `Codex made all ${steps.length} calls and got every result`, model.transcript.map((t) => `${t.step} ${t.call.name}`));
check(fs.existsSync(lastMessage) && fs.readFileSync(lastMessage, "utf8").trim() === CLOSING, "codex exec ends with the model's closing message");

const s = model.state;
const proved = s.prove ?? {};
check(proved.tests_passed === true && proved.patch_format === "diff" && proved.triage?.fixed?.length > 0,
  "session_prove: the fix is proven in a fresh sandbox, the baseline's failures fixed", proved);
let runDiff = null;
try {
  runDiff = execFileSync(binary, ["diff", proved.run_id ?? "-"], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
} catch (e) {
  runDiff = `exit ${e.status}: ${e.stderr}`;
}
check(runDiff === s.diff && /\n-    return a - b\n\+    return a \+ b\n/.test(runDiff ?? ""),
  "lazyagent-oci diff: the proven run's change is the session's diff, the fix", runDiff);
const diffFile = path.join(tmp, "fix.diff");
fs.writeFileSync(diffFile, runDiff ?? "");
let verified = null;
try {
  verified = JSON.parse(execFileSync(binary, ["verify", "--key", key.public_key, proved.attestation?.path ?? "-", "--patch", diffFile,
    "--seed", seed, "--require-passed", "--json"], { env, encoding: "utf8" }));
} catch (e) {
  verified = { status: e.status, out: String(e.stdout), err: String(e.stderr) };
}
check(proved.attestation?.keyid === key.keyid && verified?.verified === true && verified?.checked?.patch === true,
  "lazyagent-oci verify: the signed verdict verifies against the diff and the seed", { attestation: proved.attestation, verified });

check(treeHash(seed) === seedBefore, "the seed directory is untouched");
const after = podmanObjects();
const left = {
  containers: after.containers.filter((c) => !before.containers.includes(c) && ourIds(s.id).some((id) => c.includes(id))),
  volumes: after.volumes.filter((v) => !before.volumes.includes(v)),
};
check(left.containers.length === 0 && left.volumes.length === 0, "no container or volume of the session is left", left);
const sessions = fs.existsSync(path.join(state, "lazyagent-oci", "sessions")) ?
  fs.readdirSync(path.join(state, "lazyagent-oci", "sessions")) : [];
check(!s.id || !sessions.includes(s.id), "the session's record and working copy are gone", sessions);

if (failures > 0) {
  console.log("--- the script's calls and what came back ---");
  for (const t of model.transcript) console.log(`${t.step} ${t.call.name} ${t.call.arguments}\n  -> ${String(t.output).slice(0, 1500)}`);
  console.log(`--- requests (the tools Codex offered) ---\n${JSON.stringify(model.requests).slice(0, 4000)}`);
  console.log(`--- codex exec output ---\n${codexOut.slice(-6000)}`);
  if (s.id) {
    try { execFileSync(binary, ["session", "close", s.id], { env, stdio: "ignore" }); } catch { /* closed */ }
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
if (failures > 0) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("all checks passed");
