// The snapshot the planner's tools read (provider/planner_tools.h), one
// reader for every engine: the podman engine uploads it with the task
// (/task/seed), the Kubernetes engine pushes it as a seed image the planner
// pod pulls by digest (k8s_seed_image.h). What it holds: the seed's
// directories and regular files, each read hash-checked (read_seed_file);
// symlinks are not copied (nor anything the seed's own reader leaves out,
// seed_source.h: .git and ignored files); a file over `max_file` bytes or
// past `max_total` in all is left out (its path in `left_out`). Files are
// 0444, directories 0755.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "contract/seed_snapshot.h"
#include "util/tar_writer.h"

namespace lazyagent {

// Entries under `prefix` ("seed": seed/..., with seed itself first; "": the
// seed's own relative paths, no root entry).
std::vector<TarEntry> planner_snapshot(const SeedSnapshot& seed, const std::string& prefix, std::size_t max_file,
                                       std::size_t max_total, std::vector<std::string>* left_out);

}  // namespace lazyagent
