#include "util/tar_writer.h"

#include <cstdio>
#include <cstring>

namespace lazyagent {
namespace {

void put_octal(char* field, std::size_t width, unsigned long long value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), value);
}

}  // namespace

Result<std::string> write_tar(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    char h[512];
    std::memset(h, 0, sizeof h);
    std::string name = e.path + (e.directory ? "/" : "");
    std::string prefix;
    if (name.size() > 100) {
      const auto slash = name.rfind('/', name.size() - 2);
      if (slash == std::string::npos || slash > 155 || name.size() - slash - 1 > 100) {
        return engine_error("tar: path too long for ustar: " + e.path);
      }
      prefix = name.substr(0, slash);
      name = name.substr(slash + 1);
    }
    std::memcpy(h, name.data(), name.size());
    put_octal(h + 100, 8, e.mode & 07777);
    put_octal(h + 108, 8, 0);  // uid
    put_octal(h + 116, 8, 0);  // gid
    put_octal(h + 124, 12, e.directory ? 0 : e.content.size());
    put_octal(h + 136, 12, 0);  // mtime: fixed, so archives are reproducible
    std::memset(h + 148, ' ', 8);
    h[156] = e.directory ? '5' : '0';
    std::memcpy(h + 257, "ustar", 6);
    std::memcpy(h + 263, "00", 2);
    std::memcpy(h + 345, prefix.data(), prefix.size());
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);
    h[155] = ' ';
    out.append(h, sizeof h);
    if (!e.directory) {
      out += e.content;
      out.append((512 - e.content.size() % 512) % 512, '\0');
    }
  }
  out.append(1024, '\0');
  return out;
}

}  // namespace lazyagent
