// Suspicious patched code: what a forged test report needs. Pure.
//
// The verdict reads the test process's own output and exit status
// (verdict.h), so code the patch puts into that process can forge both: print
// a runner's closing report ("Ran 2 tests ... OK", "2 passed in 0.01s"), then
// end the process with status 0 before the real runner reports. No judge that
// reads the same process's output can be perfect; this scan makes the generic
// forgery visible. It flags, per file and kind, the first place and the count:
//
//   suspicious_exit            Python: sys.exit() / exit() / quit() /
//                              raise SystemExit at import time (module level or
//                              a class body: not inside a def, not under
//                              `if __name__ == "__main__":`), and os._exit()
//                              anywhere (it skips the runner's report and every
//                              cleanup). sys.exit() inside a function is not
//                              flagged: that is how command-line code ends.
//   suspicious_atexit          Python: any use of the atexit module (a handler
//                              runs after the runner's real report).
//   suspicious_signal          Python: os.kill/os.killpg, signal.signal/alarm/
//                              setitimer/raise_signal/pthread_kill, and
//                              `from signal import` (an exit through a signal
//                              or its handler).
//   suspicious_runner_summary  a test runner's summary in a string literal of a
//                              Python file, or on a line of any other file:
//                              "Ran N tests", "N passed"/"N failed",
//                              "test_x (...) ... ok", "OK" or "FAILED (...)" as
//                              a line of a multi-line string, go test's
//                              "ok  pkg 0.01s" and "--- PASS:", ctest's "100%
//                              tests passed", pytest's "::test PASSED". N may
//                              be a number or a placeholder ({n}, %d).
//
// These are patterns, not proof: each has honest uses (os._exit in a forked
// child, an atexit cleanup, a CLI printing "3 passed") and each is easy to
// evade (getattr(os, "_" + "exit")). So by default they are reported, not
// refused: `suspicious` in the result and in eval's summary. With
// patch.suspicious: refuse in the config they refuse the patch like any other
// contract finding (exit 4), in both validations. The defence that does not
// rest on patterns is evidence the runner writes itself (a report file the
// tool reads after the run), not text on stdout.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "contract/patch_contract.h"

namespace lazyagent {

// Findings for every file of the patch, in file order, then kind order
// (exit, atexit, signal, runner summary). Python rules apply to paths ending
// in .py or .pyw; the runner-summary rule to every file.
std::vector<Finding> suspicious_findings(const Patch& patch);

// One file's findings (path is used for the language and in messages).
std::vector<Finding> suspicious_findings_in(std::string_view path, std::string_view content);

// The same, counting only hits on the lines `counted` says yes to (1-based
// lines of `content`; a string's summary counts when its first line or the
// summary's own line does): a diff's added lines, so the code already in the
// user's file is not reported as the patch's.
std::vector<Finding> suspicious_findings_in(std::string_view path, std::string_view content,
                                            const std::function<bool(std::size_t)>& counted);

}  // namespace lazyagent
