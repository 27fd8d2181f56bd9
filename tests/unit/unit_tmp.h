// A temporary directory for one unit test, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

struct Tmp {
  std::string path;
  Tmp() {
    char t[] = "/tmp/lazyagent-unit-XXXXXX";
    path = mkdtemp(t);
  }
  // Never throws: a test may leave a process behind that removes parts of
  // the tree at the same time (remove_cgroup_dirs_later's grandchild rmdirs
  // what the files no longer keep), and remove_all fails on an entry that
  // went between listing and removing it. A few passes, then give up.
  ~Tmp() {
    for (int i = 0; i < 5; ++i) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      if (!ec) return;
    }
  }
};
