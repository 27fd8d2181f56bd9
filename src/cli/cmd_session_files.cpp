// `lazyagent-oci session write|read|diff|prove`: the session's working copy
// read and written as hostile input (pipeline/session_files.h), and its
// change proven through the ordinary `test` (cli/test_command.h).
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "cli/cli_args.h"
#include "cli/session_command.h"
#include "cli/test_command.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

Result<CopyDiff> session_diff(const SessionContext& s, const SessionStore& store) {
  auto held = hold_session(s.record.id, s.engine.get(), store, HoldFor::kRead);
  if (!held) return held.error();
  const auto cap = static_cast<std::size_t>(s.config.limits.work_tmpfs_mib) << 20;
  auto d = diff_session_copy(held->record, store, s.config, cap);
  if (!d) return d.error().context("session " + s.record.id);
  return d;
}

json session_diff_json(const std::string& id, const CopyDiff& d) {
  json ignored = json::array();
  for (const auto& path : d.ignored) ignored.push_back(to_valid_utf8(path));  // sandbox-written names
  return json{{"session_id", id},
              {"diff", to_valid_utf8(d.diff)},
              {"changed_paths", d.changed_paths},
              {"findings", findings_to_json(d.findings)},
              {"ignored", ignored},
              {"ok", d.findings.empty()}};
}

Result<RunResult> session_prove(const SessionContext& s, const RunStore& store, const ProgressFn& progress,
                                const std::string& sign_key) {
  auto d = session_diff(s, SessionStore(store));
  if (!d) return d.error();
  if (d->diff.empty()) return usage_error("session " + s.record.id + " has no change to prove (the working copy is the seed)");
  TestOptions opt;
  opt.project.config = s.record.config;
  opt.project.seed = s.record.seed;
  opt.project.allow = s.record.allow;
  opt.project.test_command = s.record.test_command;
  opt.sign_key = sign_key;
  auto prepared = prepare_test(opt, store, [&]() -> Result<std::string> { return check_patch_text_size(d->diff); });
  if (!prepared) return prepared.error();
  const auto engine = prepared->factory();
  return prove_judged(prepared->req, prepared->judge, *engine, store, progress);
}

namespace {

Result<std::string> read_content(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return usage_error("session write: cannot open " + path);
    in = &file;
  }
  std::string data;
  char buf[65536];
  while (in->read(buf, sizeof buf) || in->gcount() > 0) {
    data.append(buf, static_cast<std::size_t>(in->gcount()));
    if (data.size() > kSessionFileBytes) {
      return usage_error("session write: the content is larger than " + std::to_string(kSessionFileBytes) + " bytes");
    }
  }
  return data;
}

int session_write(const std::vector<std::string>& args) {
  std::string id, path, from = "-";
  bool as_json = false;
  ArgParser p("session write", "ID PATH [FILE|-] [--json]",
              "Writes FILE (default: stdin) at PATH in the session's working copy. PATH follows the patch\n"
              "contract's rules (relative, no '..', no control characters) and must be on the allow list\n"
              "(a change elsewhere would be refused at prove); no symlink in the copy is followed.");
  p.positional("ID", &id, true, "the session's id");
  p.positional("PATH", &path, true, "the path in the working copy");
  p.positional("FILE", &from, false, "the content ('-' = stdin)");
  p.flag("--json", &as_json, "print {session_id, path, bytes} as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  auto s = session_context(id, store);
  if (!s) return report_error(s.error(), as_json);
  auto content = read_content(from);
  if (!content) return report_error(content.error(), as_json);
  if (!path_on_allowlist(path, s->config.allow)) {
    return report_error(usage_error("session write: " + display_path(path) + " is not on the allow list"), as_json);
  }
  const SessionStore sessions(store);
  auto held = hold_session(id, s->engine.get(), sessions, HoldFor::kRead);
  if (!held) return report_error(held.error(), as_json);
  if (auto st = write_session_file(held->record, sessions, path, *content); !st) {
    return report_error(st.error().context("session " + id), as_json);
  }
  if (as_json) {
    std::cout << json{{"session_id", id}, {"path", path}, {"bytes", content->size()}}.dump(2) << std::endl;
  }
  return kExitPassed;
}

int session_read(const std::vector<std::string>& args) {
  std::string id, path;
  bool as_json = false;
  ArgParser p("session read", "ID PATH [--json]",
              "Prints the regular file at PATH of the session's working copy (at most 4 MiB). A symlink is\n"
              "never followed, a FIFO or device is refused without blocking; to a terminal every control\n"
              "character is shown escaped.");
  p.positional("ID", &id, true, "the session's id");
  p.positional("PATH", &path, true, "the path in the working copy");
  p.flag("--json", &as_json, "print {session_id, path, bytes, content} as one JSON object (content as valid UTF-8)");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  const SessionStore sessions(store);
  auto s = session_context(id, store);
  if (!s) return report_error(s.error(), as_json);
  auto held = hold_session(id, s->engine.get(), sessions, HoldFor::kRead);
  if (!held) return report_error(held.error(), as_json);
  auto content = read_session_file(held->record, sessions, path, kSessionFileBytes);
  if (!content) return report_error(content.error().context("session " + id), as_json);
  if (as_json) {
    std::cout << json{{"session_id", id}, {"path", path}, {"bytes", content->size()}, {"content", to_valid_utf8(*content)}}.dump(2)
              << std::endl;
  } else if (::isatty(STDOUT_FILENO)) {
    std::cout << escape_for_terminal(*content);
  } else {
    std::cout.write(content->data(), static_cast<std::streamsize>(content->size()));
  }
  return kExitPassed;
}

int session_diff_cmd(const std::vector<std::string>& args) {
  std::string id;
  bool as_json = false;
  ArgParser p("session diff", "ID [--json]",
              "Prints the session's change as a unified diff against the seed as it was at open, then judges\n"
              "it by the patch contract as any patch is (allowed paths, size caps, control characters).\n"
              "New files the seed's git repository ignores (build output) are left out, as `git diff` leaves\n"
              "them out. Exit 0: the diff passes the contract (or is empty); 4: prove would refuse it (the\n"
              "findings are on stderr).");
  p.positional("ID", &id, true, "the session's id");
  p.flag("--json", &as_json, "print {session_id, diff, changed_paths, findings, ignored, ok} as one JSON object");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  auto s = session_context(id, store);
  if (!s) return report_error(s.error(), as_json);
  auto d = session_diff(*s, SessionStore(store));
  if (!d) return report_error(d.error(), as_json);
  if (as_json) {
    std::cout << session_diff_json(id, *d).dump(2) << std::endl;
  } else {
    if (::isatty(STDOUT_FILENO)) std::cout << escape_for_terminal(d->diff);
    else std::cout.write(d->diff.data(), static_cast<std::streamsize>(d->diff.size()));
    for (const auto& f : d->findings) std::cerr << "refused: " << f.code << ": " << escape_for_terminal(f.message) << "\n";
    if (!d->ignored.empty()) {
      std::cerr << "left out " << d->ignored.size() << " new file(s) the seed's repository ignores or a tool's "
                << "cache directory holds (CACHEDIR.TAG) (first: "
                << escape_for_terminal(d->ignored.front()) << ")\n";
    }
  }
  return d->findings.empty() ? kExitPassed : kExitRefused;
}

int session_prove_cmd(const std::vector<std::string>& args) {
  std::string id, sign_key;
  bool as_json = false;
  ArgParser p("session prove", "ID [--sign-key FILE] [--json]",
              "Proves the session's change (its diff) through the ordinary `test`: the contract, a fresh\n"
              "sandbox over a new copy of your seed, the baseline, the verdict, provenance. A passed run can\n"
              "then be written into your tree with `lazyagent-oci apply RUN_ID`. Exit codes as `test`.");
  p.positional("ID", &id, true, "the session's id");
  add_sign_key_option(p, &sign_key);
  p.flag("--json", &as_json, "print the result object of `test --json`");
  if (auto done = parse_or_exit(p, args)) return *done;
  const RunStore store = default_run_store();
  auto s = session_context(id, store);
  if (!s) return report_error(s.error(), as_json);
  return finish_result(session_prove(*s, store, [](const std::string& step) { progress_line(step); }, sign_key),
                       as_json);
}

}  // namespace

int cmd_session_files(const std::string& sub, const std::vector<std::string>& args) {
  if (sub == "write") return session_write(args);
  if (sub == "read") return session_read(args);
  if (sub == "diff") return session_diff_cmd(args);
  return session_prove_cmd(args);
}

}  // namespace lazyagent
