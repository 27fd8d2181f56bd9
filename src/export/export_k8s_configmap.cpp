#include "export/export_k8s_configmap.h"

#include <algorithm>
#include <map>
#include <optional>

#include "util/base64.h"
#include "util/utf8.h"
#include "util/yaml_text.h"

namespace lazyagent {

using nlohmann::ordered_json;

Result<std::vector<K8sFile>> seed_files(const SeedSnapshot& seed, const std::optional<Patch>& patch,
                                        std::vector<std::string>* empty_dirs) {
  std::vector<FileWrite> writes;
  if (patch) {
    const auto findings = check_patch_against_seed(seed, *patch);
    if (!findings.empty()) {
      std::string msg = "the patch does not fit the seed:";
      for (const auto& f : findings) msg += " " + f.code + " (" + f.path + ")";
      return Error{ErrorKind::kPatch, msg};
    }
    for (const auto& f : patch->files) {
      const SeedEntry* e = find_seed_entry(seed, f.path);
      writes.push_back({f.path, f.content, e != nullptr && (e->mode & 0111) ? 0755u : 0644u, false});
    }
  }
  return seed_files(seed, writes, empty_dirs);
}

Result<std::vector<K8sFile>> seed_files(const SeedSnapshot& seed, const std::vector<FileWrite>& writes,
                                        std::vector<std::string>* empty_dirs) {
  std::map<std::string, const FileWrite*> pending;
  for (const auto& w : writes) pending[w.path] = &w;
  std::vector<K8sFile> out;
  std::vector<std::string> symlinks, dirs;
  for (const auto& e : seed.entries) {
    auto it = pending.find(e.path);
    if (it != pending.end()) {
      if (!it->second->remove) out.push_back({e.path, it->second->content, it->second->mode & 0777});
      pending.erase(it);
    } else if (e.kind == SeedEntry::Kind::kSymlink) {
      symlinks.push_back(e.path);
    } else if (e.kind == SeedEntry::Kind::kDir) {
      dirs.push_back(e.path);
    } else {
      auto content = read_seed_file(seed, e);
      if (!content) return content.error();
      out.push_back({e.path, std::move(*content), e.mode & 0777});
    }
  }
  for (const auto& [path, w] : pending) {  // new files
    if (!w->remove) out.push_back({path, w->content, w->mode & 0777});
  }
  if (!symlinks.empty()) {
    std::string msg = "the seed has symlinks, which a ConfigMap cannot carry:";
    for (const auto& s : symlinks) msg += " " + s;
    return usage_error(msg);
  }
  std::sort(out.begin(), out.end(), [](const K8sFile& a, const K8sFile& b) { return a.path < b.path; });
  for (const auto& f : out) {
    if (f.path.rfind("..", 0) == 0) {  // the API server refuses such item paths
      return usage_error("seed path " + f.path + ": Kubernetes refuses volume item paths starting with '..'");
    }
  }
  if (empty_dirs) {
    for (const auto& d : dirs) {
      const bool holds_file = std::any_of(out.begin(), out.end(), [&](const K8sFile& f) {
        return f.path.size() > d.size() && f.path.compare(0, d.size(), d) == 0 && f.path[d.size()] == '/';
      });
      if (!holds_file) empty_dirs->push_back(d);
    }
  }
  return out;
}

Result<FileConfigMap> files_configmap(const ordered_json& metadata, const std::vector<K8sFile>& files) {
  FileConfigMap cm;
  ordered_json data = ordered_json::object(), binary = ordered_json::object();
  cm.items = ordered_json::array();
  const int width = files.size() > 10000 ? static_cast<int>(std::to_string(files.size() - 1).size()) : 4;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const K8sFile& f = files[i];
    char key[32];
    std::snprintf(key, sizeof key, "f%0*zu", width, i);
    if (yaml_safe_text(f.content)) {
      data[key] = f.content;
    } else {
      binary[key] = base64_encode(f.content);
      ++cm.binary_files;
    }
    cm.bytes += f.content.size();
    ordered_json item = {{"key", key}, {"path", f.path}};
    if ((f.mode & 0777) != kConfigMapDefaultMode) item["mode"] = f.mode & 0777;
    cm.items.push_back(item);
  }
  if (cm.bytes > kConfigMapMaxBytes) {
    return usage_error("the seed is " + std::to_string(cm.bytes) + " bytes, more than a ConfigMap holds (" +
                       std::to_string(kConfigMapMaxBytes) + " bytes in total)");
  }
  cm.manifest = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", metadata}};
  if (!data.empty()) cm.manifest["data"] = data;
  if (!binary.empty()) cm.manifest["binaryData"] = binary;
  return cm;
}


}  // namespace lazyagent
