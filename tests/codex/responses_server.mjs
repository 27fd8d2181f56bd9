// A scripted model provider: the part of the OpenAI Responses API that Codex
// CLI speaks (`POST /v1/responses`, `stream: true`), answered from a script
// instead of a model. Each step of the script is one tool call; the step a
// request is at is the number of our calls whose output the request carries
// back (Codex sends the whole conversation each turn, `store: false`), and
// the output of the previous call must pass that step's `expect` before the
// next call is made. A failed expectation, or the end of the script, is
// answered with a closing message, so the agent stops.
//
// Answers are server-sent events, as the API streams them:
//   response.created, response.output_item.done (a function_call item, or a
//   message at the end), response.completed.
// A tool of an MCP server reaches the model in a namespace tool
// ({"type":"namespace","name":"mcp__SERVER","tools":[...]}), and a call names
// the tool and that namespace.
//
//   const model = await startScriptedModel({namespace, steps, closing});
//   model.port, model.failures, model.transcript, model.requests, model.done
// A step: {name, args: (state) => object, expect: (result, text, state) => string|null}
// (result: the JSON the tool returned, parsed from Codex's rendering of it;
// expect returns what is wrong, or null).
import http from "node:http";

const CALL_PREFIX = "call_lazyagent_";

// Codex renders an MCP tool's result for the model as text: a header
// ("Wall time: 0.4 seconds\nOutput:\n") and then the tool's content.
export function toolResultJson(text) {
  const at = text.indexOf("Output:\n");
  const body = at >= 0 ? text.slice(at + "Output:\n".length) : text;
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

function outputText(output) {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map((c) => c?.text ?? "").join("");
  return JSON.stringify(output ?? null);
}

function sse(res, event) {
  res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

export function startScriptedModel({ namespace, steps, closing }) {
  const state = {};
  const failures = [];
  const transcript = [];  // {step, call, output} for every call made
  const requests = [];    // a summary of every request: its tools and where it was
  let finished;
  const done = new Promise((resolve) => { finished = resolve; });
  let closed = false;

  // What to answer a request with: the next call, or the closing message.
  function decide(body) {
    const input = Array.isArray(body.input) ? body.input : [];
    const outputs = input.filter((i) => i?.type === "function_call_output" && String(i.call_id).startsWith(CALL_PREFIX));
    const tools = Array.isArray(body.tools) ? body.tools : [];
    const ns = tools.find((t) => t?.type === "namespace" && t.name === namespace);
    requests.push({ at_step: outputs.length, namespaces: tools.filter((t) => t?.type === "namespace").map((t) => t.name),
      tools_in_namespace: (ns?.tools ?? []).map((t) => t.name) });
    if (!ns) return { stop: `the request offers no tool namespace ${namespace} (tools: ${JSON.stringify(tools.map((t) => t?.name))})` };
    const n = outputs.length;
    if (n > 0) {
      const step = steps[n - 1];
      const text = outputText(outputs[n - 1].output);
      transcript[n - 1].output = text;
      let wrong;
      try {
        wrong = step.expect(toolResultJson(text), text, state);
      } catch (e) {
        wrong = `its check threw ${e?.message ?? e}`;
      }
      if (wrong) return { stop: `step ${n} (${step.name}): ${wrong}` };
    }
    if (n >= steps.length) return { message: closing };
    const step = steps[n];
    const call = { type: "function_call", id: `fc_${n + 1}`, call_id: `${CALL_PREFIX}${n + 1}`, namespace,
      name: step.name, arguments: JSON.stringify(step.args(state)) };
    transcript[n] = { step: n + 1, call: { name: call.name, arguments: call.arguments }, output: null };
    return { call };
  }

  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (d) => { raw += d; });
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/responses") {
        failures.push(`unexpected request ${req.method} ${req.url}`);
        res.writeHead(404).end();
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        failures.push("a request body that is not JSON");
        res.writeHead(400).end();
        return;
      }
      const answer = closed ? { message: closing } : decide(body);
      const id = `resp_${requests.length}`;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      sse(res, { type: "response.created", response: { id } });
      let item;
      if (answer.call) {
        item = answer.call;
      } else {
        if (answer.stop) failures.push(answer.stop);
        const text = answer.stop ? `Stopping: ${answer.stop}` : answer.message;
        item = { type: "message", role: "assistant", id: `msg_${requests.length}`, content: [{ type: "output_text", text }] };
        closed = true;
        finished();
      }
      sse(res, { type: "response.output_item.done", output_index: 0, item });
      sse(res, { type: "response.completed", response: { id, usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } } });
      res.end();
    });
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      resolve({ port: server.address().port, failures, transcript, requests, state, done,
        finishedScript: () => closed && failures.length === 0, close: () => server.close() });
    });
  });
}
