// A temporary directory for one unit test, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

struct Tmp {
  std::string path;
  Tmp() {
    char t[] = "/tmp/lazyagent-unit-XXXXXX";
    path = mkdtemp(t);
  }
  ~Tmp() { std::filesystem::remove_all(path); }
};
