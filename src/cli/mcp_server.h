// The Model Context Protocol over stdio (`lazyagent-oci mcp`): JSON-RPC 2.0,
// one message a line on stdin and stdout (stderr is free for logs), protocol
// revision 2025-06-18 (2025-03-26 and 2024-11-05 answered when a client asks
// for them). What it answers:
//
//   initialize                the revision, capabilities {tools}, serverInfo
//   ping                      {}
//   tools/list                the tools (cmd_mcp.cpp), each with its input schema
//   tools/call                one call at a time, in order, on a worker thread
//                             (the loop keeps reading: ping, cancellation);
//                             calls that come meanwhile wait (16 at most, then
//                             -32000, "busy")
//   notifications/initialized ignored
//   notifications/cancelled   for the running call: the same flag a signal
//                             sets (interrupt.h), so the pipeline stops and
//                             removes its sandbox as on ^C; no response is sent
//   notifications/progress    sent during a call whose request carried
//                             _meta.progressToken: one per step and note
//   end of input              every request read before it is answered: the
//                             running call and the waiting ones run to their
//                             end, in order, then exit 0 (a client may pipe
//                             its requests and close stdin)
//   SIGINT/SIGTERM            waiting calls dropped, the running one stopped
//                             (sandbox removed, answered as interrupted) and
//                             awaited, exit 128+N
//
// Errors (JSON-RPC error objects, the reason in `message`): -32700 a line
// that is not JSON; -32600 not a JSON-RPC 2.0 request (batches included: the
// 2025-06-18 revision has none); -32601 an unknown method; -32602 invalid
// params: an unknown tool, arguments of the wrong type, or what the CLI would
// refuse as a usage error (a seed outside mcp.seeds, a bad timeout, a patch
// over the size cap); -32000 busy (too many calls waiting). A tool that ran and failed (podman down,
// an isolation violation) is a result with isError true, not a JSON-RPC error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/run_result.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kMcpProtocolLatest = "2025-06-18";

// The revision `initialize` answers with: the client's when this server
// speaks it, else the latest.
std::string negotiate_mcp_protocol(const std::string& requested);

struct McpTool {
  std::string name, title, description;
  nlohmann::json input_schema;
  // Runs a call. A kUsage or kPatch error is the client's input (-32602);
  // another error becomes a result with isError. `progress` is a no-op when
  // the client asked for none.
  std::function<Result<nlohmann::json>(const nlohmann::json& arguments, const ProgressFn& progress)> call;
};

// Serves until end of input (every request read is answered first) or a
// signal; returns the exit code.
int serve_mcp(int in_fd, int out_fd, const std::vector<McpTool>& tools, const std::string& version);

}  // namespace lazyagent
