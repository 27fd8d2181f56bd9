// `lazyagent-oci provider-stub --script FILE [--listen HOST:PORT] [--log FILE]`:
// serve a scripted OpenAI-compatible provider (provider_stub.h) until
// SIGINT/SIGTERM, for the demo and for trying the planner without a model.
//
// stdout carries exactly one line, "listening on http://HOST:PORT/v1", so a
// script can start the stub on port 0 and read the address it got. Everything
// else goes to stderr. The log never holds the Authorization header.
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "util/interrupt.h"
#include "provider/provider_stub.h"
#include "util/terminal_text.h"

namespace lazyagent {
namespace {

constexpr std::size_t kMaxScriptBytes = 16u << 20;

Result<std::string> read_script(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  struct stat st {};
  if (!in || ::stat(path.c_str(), &st) != 0) return usage_error("provider-stub: cannot read --script " + path);
  if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > kMaxScriptBytes) {
    return usage_error("provider-stub: --script " + path + " must be a regular file of at most 16 MiB");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct ListenAddress {
  std::string host;
  int port = 0;
  std::string url_host() const { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }
};

// "HOST:PORT" or "[IPv6]:PORT"; port 0 asks for an ephemeral port.
Result<ListenAddress> parse_listen(const std::string& text) {
  const auto bad = [&] {
    return usage_error("provider-stub: --listen: expected HOST:PORT or [IPv6]:PORT with a port from 0 "
                       "to 65535, got '" + text + "'");
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad();
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (a.host.front() == '[') {
    if (a.host.size() < 3 || a.host.back() != ']') return bad();
    a.host = a.host.substr(1, a.host.size() - 2);
  } else if (a.host.find(':') != std::string::npos) {
    return bad();
  }
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stol(port) > 65535) {
    return bad();
  }
  a.port = static_cast<int>(std::stol(port));
  return a;
}

// One JSON line per request, appended and flushed as it happens.
class RequestLogFile {
 public:
  explicit RequestLogFile(const std::string& path) : out_(path, std::ios::app) {}
  bool ok() const { return static_cast<bool>(out_); }
  void write(const StubRequest& r) {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    std::tm tm {};
    gmtime_r(&secs, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    const long ms = static_cast<long>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03ldZ", ms);
    const nlohmann::json line = {{"time", std::string(stamp) + frac},
                                 {"method", r.method},
                                 {"path", to_valid_utf8(r.path)},
                                 {"status", r.status},
                                 {"reply", r.reply_index < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.reply_index)},
                                 {"body", to_valid_utf8(r.body)}};
    std::lock_guard<std::mutex> lock(mu_);  // requests are served on several threads
    out_ << line.dump() << '\n';
    out_.flush();
  }

 private:
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace

int cmd_provider_stub(const std::vector<std::string>& args) {
  std::string script_path, listen = "127.0.0.1:0", log_path;
  ArgParser p("provider-stub", "--script FILE [--listen HOST:PORT] [--log FILE]",
              "Serves a scripted OpenAI-compatible provider: a stand-in for a real one in the demo\n"
              "and tests, not a model. POST /v1/chat/completions answers with the script's replies:\n"
              "the first whose \"match\" tag occurs in the request, else the next in-order reply (the\n"
              "last repeats). GET /v1/models lists \"lazyagent-stub\". Prints one line on stdout,\n"
              "\"listening on http://HOST:PORT/v1\", and serves until SIGINT/SIGTERM.\n\n"
              "script: {\"api_key\": \"KEY\", \"replies\": [{\"match\": \"\", \"status\": 200,\n"
              "         \"content\": \"...\", \"raw_body\": \"\", \"delay_ms\": 0, \"retry_after\": \"\",\n"
              "         \"usage\": {\"prompt_tokens\": 12, \"completion_tokens\": 34, \"total_tokens\": 46}}]}");
  p.option("--script", &script_path, "FILE", "the scripted replies (JSON, required)");
  p.option("--listen", &listen, "HOST:PORT", "where to serve (default 127.0.0.1:0, a free port)");
  p.option("--log", &log_path, "FILE", "append one JSON line per request (no Authorization header)");
  if (auto st = p.parse(args); !st) return report_error(st.error(), false);
  if (p.help_requested()) {
    std::cout << p.help_text();
    return 0;
  }
  if (script_path.empty()) return report_error(usage_error("provider-stub: --script FILE is required"), false);
  auto text = read_script(script_path);
  if (!text) return report_error(text.error(), false);
  auto script = parse_stub_script(*text);
  if (!script) return report_error(script.error().context("provider-stub: --script " + script_path), false);
  auto address = parse_listen(listen);
  if (!address) return report_error(address.error(), false);

  std::unique_ptr<RequestLogFile> log;  // declared before the stub: outlives its threads
  if (!log_path.empty()) {
    log = std::make_unique<RequestLogFile>(log_path);
    if (!log->ok()) return report_error(usage_error("provider-stub: cannot append to --log " + log_path), false);
  }
  const std::size_t replies = script->replies.size();
  const bool keyed = !script->api_key.empty();
  ProviderStub stub(std::move(*script));
  if (log) stub.set_observer([&log](const StubRequest& r) { log->write(r); });
  auto port = stub.listen(address->host, address->port);
  if (!port) return report_error(port.error().context("provider-stub"), false);

  std::cerr << "provider-stub: a scripted stand-in for an OpenAI-compatible provider, not a model:\n"
            << "provider-stub: it answers with the " << replies << " replies of "
            << escape_for_terminal(script_path) << (keyed ? " and wants its api_key" : " and wants no key")
            << "; stop it with Ctrl-C" << std::endl;
  std::cout << "listening on http://" << address->url_host() << ":" << *port << "/v1" << std::endl;

  while (interrupted_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stub.stop();
  std::cerr << "provider-stub: stopped after " << stub.requests() << " chat request(s)" << std::endl;
  return 0;
}

}  // namespace lazyagent
