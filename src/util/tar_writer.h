// A minimal in-memory ustar writer, for uploads through podman's archive API
// (PUT /containers/{id}/archive). Regular files and directories only; paths
// up to 100 bytes, or 255 with the ustar prefix field.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace lazyagent {

struct TarEntry {
  std::string path;  // relative, '/'-separated
  std::string content;
  unsigned mode = 0644;
  bool directory = false;
};

Result<std::string> write_tar(const std::vector<TarEntry>& entries);

}  // namespace lazyagent
