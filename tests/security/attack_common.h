// Shared by the attack files: run one hostile patch through `test`, collect
// the report's evidence. Each attack prints what it achieved from inside the
// sandbox; the test asserts on those lines and on what the host sees.
#pragma once

#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness.h"

namespace sec {

// Runs `test --json` with attack_patch(prelude); returns the result JSON with
// "_exit" (the CLI's exit code) and "_ms" (its wall time) added.
nlohmann::json run_attack(const it::CliEnv& env, const std::string& prelude,
                          std::vector<std::string> extra = {});
std::string output(const nlohmann::json& j);

// Lines of `text` that start with `prefix`, joined with '\n'.
std::string lines_with(const std::string& text, const std::string& prefix);
bool has(const std::string& text, const std::string& needle);

// Records one line of evidence for the current test case in the file named by
// $LAZYAGENT_SECURITY_EVIDENCE (scripts/security-report.sh); no-op otherwise.
void evidence(const std::string& text);

// Runs a probe script with python3 in a plain `podman run --rm` of the sandbox
// image, with `podman_flags` (e.g. "--network host"): the controls that show a
// probe detects a breach when the isolation is absent.
std::string run_control(const std::string& podman_flags, const std::string& python_probe);

// Pids of host processes whose command line contains `marker`.
std::vector<int> host_pids_with(const std::string& marker);

}  // namespace sec
