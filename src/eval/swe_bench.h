// SWE-bench predictions as eval tasks.
//
// A predictions file is what SWE-bench's harness takes: JSON Lines, or one
// JSON array, of {"instance_id": "...", "model_patch": "<unified diff>",
// "model_name_or_path": "..."} (other keys are SWE-bench's and ignored). Each
// prediction becomes a diff task (eval_tasks.h) whose id is the instance id;
// where its project lives and how its tests run comes from a seed map, a JSON
// object keyed by instance id:
//   {"astropy__astropy-12907": "repos/astropy",
//    "django__django-11099": {"seed": "repos/django", "test_command": "...",
//                             "allow": ["django/"], "image": "localhost/django-env"}}
// (relative seeds are relative to the map's directory). A prediction without
// an entry in the map is an error naming it (`no_seed_mapping`); an empty
// `model_patch` stays a task and is refused as empty_diff when it runs, as
// SWE-bench counts it unresolved. Errors are reported like a task file's,
// every one with its line (0 for the map). Pure.
#pragma once

#include <string>
#include <string_view>

#include "eval/eval_tasks.h"

namespace lazyagent {

namespace task_reason {
inline constexpr const char* kNoSeedMapping = "no_seed_mapping";
inline constexpr const char* kBadSeedMap = "bad_seed_map";
}  // namespace task_reason

// `map_dir` resolves relative seeds in the map.
ParsedTasks parse_swe_bench_predictions(std::string_view predictions, std::string_view seed_map,
                                        const std::string& map_dir);

}  // namespace lazyagent
