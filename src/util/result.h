// Errors are values across module boundaries (STYLE.md principle 4).
//
// Result<T> holds either a T or an Error. Only main() turns an Error into an
// exit code; every layer in between may add context as the error climbs:
//   return r.error().context("creating sandbox for run " + id);
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace lazyagent {

// What kind of failure, so main() can pick the documented exit code.
enum class ErrorKind {
  kUsage,      // bad flags or config: exit 2
  kPlanner,    // planner or provider failed: exit 3
  kPatch,      // patch refused by the contract: exit 4
  kEngine,     // podman / infrastructure: exit 5
  kTimeout,    // a deadline passed (callers usually handle it; else exit 5)
  kInterrupted, // SIGINT/SIGTERM: exit 130
  kIsolation,  // the sandbox's isolation probe saw a violation: exit 5, never retried
  // The engine could not be reached: its service refused the connection, its
  // socket is gone, the connection broke mid-call, or a proxy in front of it
  // answered 502/503/504 (a service restarting). An outage to wait out, not a
  // fault of the run: exit 5 (retryable), and eval waits for the engine
  // (eval_outage.h) instead of recording an infra_error.
  kUnreachable
};

// The one name of each kind ("usage", ..., "isolation"): `error_kind` in JSON.
inline const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kPlanner: return "planner";
    case ErrorKind::kPatch: return "patch";
    case ErrorKind::kEngine: return "engine";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kInterrupted: return "interrupted";
    case ErrorKind::kIsolation: return "isolation";
    case ErrorKind::kUnreachable: return "engine_unreachable";
  }
  return "engine";
}

struct Error {
  Error() = default;
  Error(ErrorKind k, std::string m) : kind(k), message(std::move(m)) {}

  ErrorKind kind = ErrorKind::kEngine;
  std::string message;
  // The ids that existed when it failed (run_id, planner_task_id,
  // sandbox_id), in the order they were attached: what a user takes to
  // `task show` or `verify`. The --json error object carries them.
  std::vector<std::pair<std::string, std::string>> ids;

  // "outer: inner" — context goes in front, like Mesos' error chaining.
  Error context(const std::string& outer) const {
    Error e = *this;
    e.message = outer + ": " + message;
    return e;
  }
  // The same error naming one more id (an empty value, or a key already
  // named, changes nothing).
  Error with_id(const std::string& key, const std::string& value) const {
    Error e = *this;
    if (value.empty()) return e;
    for (const auto& [k, v] : e.ids) {
      if (k == key) return e;
    }
    e.ids.emplace_back(key, value);
    return e;
  }
  const std::string* id(const std::string& key) const {
    for (const auto& [k, v] : ids) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// Worth trying again as it is, later: the engine was unreachable (an
// outage). Error JSON says so as `"retryable": true` (CLI, MCP, events).
inline bool is_retryable(const Error& e) { return e.kind == ErrorKind::kUnreachable; }

inline Error usage_error(std::string m) { return Error{ErrorKind::kUsage, std::move(m)}; }
inline Error engine_error(std::string m) { return Error{ErrorKind::kEngine, std::move(m)}; }

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() { return Unit{}; }

}  // namespace lazyagent
