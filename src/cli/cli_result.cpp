// How the CLI shows a test/run result: exactly one JSON object on stdout
// with --json, else a summary for people with every byte from the sandbox
// escaped (terminal_text.h); and the exit code the result means (cli.h).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "contract/junit_report.h"
#include "pipeline/run_result.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

void print_list(std::ostream& o, const char* what, const nlohmann::json& list) {
  if (!list.is_array() || list.empty()) return;
  o << "  " << what << ":";
  for (const auto& x : list) o << " " << escape_for_terminal(x.get<std::string>());
  o << "\n";
}

void print_triage(std::ostream& o, const nlohmann::json& t) {
  if (!t.is_object()) return;
  o << "verdict: " << t.value("verdict", "") << " (" << t["runs"].size() << " run(s))\n";
  if (t["baseline"] == "off") {
    // --no-baseline: there is no second side to compare with.
    o << "  per-test triage: off (--no-baseline: the seed's tests were not run unpatched)\n";
  } else if (t["baseline"].is_object() && t["baseline"].contains("error")) {
    o << "  baseline: " << escape_for_terminal(t["baseline"].value("error", "")) << "\n";
  } else if (!t.value("available", false)) {
    o << "  per-test triage: not available (no per-test results on both sides: see README \"Test runners\")\n";
  }
  for (const char* k : {"fixed", "still_failing", "newly_broken", "flaky", "added"}) print_list(o, k, t[k]);
}

void print_human(const RunResult& r) {
  std::ostream& o = std::cout;
  const std::string verdict = r.status == RunStatus::kRefused ? "REFUSED" : r.tests_passed ? "PASSED" : "FAILED";
  o << "run " << r.run_id << ": " << verdict << "\n";
  if (r.planner.is_object()) {
    const auto& u = r.planner["usage"];
    o << "planner task: " << r.planner.value("task_id", "") << " (model " << escape_for_terminal(r.planner.value("model", ""))
      << ", " << (u.is_object() ? u.value("total_tokens", 0L) : 0L) << " tokens)\n";
  }
  if (!r.findings.empty()) {
    for (const auto& f : r.findings) {
      o << "  " << f.code << (f.path.empty() ? "" : " [" + escape_for_terminal(f.path) + "]") << ": "
        << escape_for_terminal(f.message) << "\n";
    }
    return;
  }
  if (!r.tests_passed) o << "reason: " << escape_for_terminal(r.reason) << "\n";
  if (!r.evidence.empty()) {
    o << "evidence: " << r.evidence
      << (r.evidence == "driver" ? " (the report the runner writes at its end)"
          : r.evidence == "junit" ? " (the JUnit file the config names)"
                                  : " (the runner's report in the output)");
    if (!r.evidence_note.empty()) o << ": " << r.evidence_note;
    o << "\n";
  }
  for (const auto& f : r.suspicious) {
    o << "suspicious: " << f.code << (f.path.empty() ? "" : " [" + escape_for_terminal(f.path) + "]") << ": "
      << escape_for_terminal(f.message) << "\n";
  }
  if (r.repair.is_object()) {
    for (const auto& a : r.repair["attempts"]) {
      o << "attempt " << a.value("attempt", 0) << ": " << a.value("verdict", "") << ", exit "
        << a.value("test_exit_code", -1) << ", " << a.value("tokens", 0L) << " tokens, patch "
        << a.value("patch_sha256", "").substr(0, 12) << ", run " << a.value("run_id", "") << "\n";
    }
    o << "stopped: " << r.repair.value("stop_reason", "") << " (" << r.repair["total_usage"].value("total_tokens", 0L)
      << " tokens in all)\n";
  }
  print_triage(o, r.triage);
  // A podman container id (shortened as podman does) or a Kubernetes namespace/pod.
  const bool pod = r.sandbox_id.find('/') != std::string::npos;
  o << "sandbox: " << (pod ? r.sandbox_id : r.sandbox_id.substr(0, 12)) << " (removed)\n";
  o << "image: " << r.image << " (" << image_hash_text(r.image_digest) << ")\n";
  o << "changed: ";
  for (std::size_t i = 0; i < r.changed_paths.size(); ++i) o << (i ? ", " : "") << escape_for_terminal(r.changed_paths[i]);
  o << (r.changed_paths.empty() ? "(nothing)\n" : "\n");
  if (r.change.is_object()) {
    const auto& st = r.change["diff_stats"];
    o << "patch: " << r.patch_format << ", " << st.value("files", 0) << " file(s), +" << st.value("added", 0) << " -"
      << st.value("removed", 0) << " line(s) (`lazyagent-oci diff " << r.run_id << "`)\n";
  }
  o << "test exit code: " << r.test_exit_code << "\n";
  o << "--- test output" << (r.test_output_truncated ? " (cut)" : "") << " ---\n"
    << escape_for_terminal(r.test_output);
  if (!r.test_output.empty() && r.test_output.back() != '\n') o << "\n";
  o << "---\ntimings (ms):";
  for (const auto& t : r.timings) o << " " << t.step << "=" << t.ms;
  o << "\n";
}

}  // namespace

int finish_result(const Result<RunResult>& result, bool json, const std::string& removed_what) {
  if (!result) return report_error(result.error(), json, removed_what);
  if (json) {
    std::cout << result_to_json(*result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  } else {
    print_human(*result);
  }
  if (result->status == RunStatus::kRefused) return kExitRefused;
  return result->tests_passed ? kExitPassed : kExitFailed;
}

Status check_report_option(const std::string& command, const std::string& spec) {
  if (spec.empty() || (spec.rfind("junit:", 0) == 0 && spec.size() > 6)) return ok_status();
  return usage_error(command + ": --report: expected junit:PATH, got '" + spec + "'");
}

void write_report(const std::string& command, const std::string& spec, const RunResult& r) {
  const std::string path = spec.substr(6);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << junit_xml_of(r.tests, "lazyagent-oci " + r.run_id, r.tests_passed, r.reason);
  f.close();
  if (!f) {
    std::fprintf(stderr, "%s: --report: cannot write %s: %s\n", command.c_str(), path.c_str(), std::strerror(errno));
  }
}

}  // namespace lazyagent
