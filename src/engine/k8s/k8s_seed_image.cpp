#include "engine/k8s/k8s_seed_image.h"

#include <sys/utsname.h>

#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/k8s/k8s_engine.h"
#include "util/tar_writer.h"
#include "store/ownership.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

constexpr const char* kSeedLayerType = "application/vnd.oci.image.layer.v1.tar";
constexpr const char* kSeedConfigType = "application/vnd.oci.image.config.v1+json";

std::string seed_blob_digest(const std::string& bytes) { return "sha256:" + sha256_hex(bytes); }

std::string seed_image_arch() {
  struct utsname u {};
  if (uname(&u) != 0) return "amd64";
  const std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  return m;
}

Result<std::string> read_copier(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return usage_error("k8s.registry: the seed image's copier " + path +
                       " cannot be read: install Debian's busybox-static (apt-get install busybox-static)");
  }
  std::ostringstream s;
  s << in.rdbuf();
  std::string b = s.str();
  if (b.size() < 4 || b.compare(0, 4, "\x7f" "ELF") != 0) return usage_error(path + " is not an executable (ELF)");
  return b;
}

}  // namespace

Result<SeedImageBlobs> build_seed_image(const std::vector<K8sFile>& files, const std::vector<std::string>& empty_dirs,
                                        const std::map<std::string, std::string>& annotations,
                                        const std::string& copier_path) {
  SeedImageBlobs b;
  if (files.size() > kSeedImageMaxFiles) {
    return usage_error("the seed has " + std::to_string(files.size()) + " files, more than the registry path takes (" +
                       std::to_string(kSeedImageMaxFiles) + "): exclude some (seed.exclude)");
  }
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.content.size();
  if (total > kSeedImageMaxBytes) {
    return usage_error("the seed is " + std::to_string(total) + " bytes, more than the registry path takes (" +
                       std::to_string(kSeedImageMaxBytes) + "): exclude some (seed.exclude)");
  }
  auto copier = read_copier(copier_path);
  if (!copier) return copier.error();
  auto copier_layer = write_tar({{"bin", "", 0755, true}, {"bin/busybox", std::move(*copier), 0755, false}});
  if (!copier_layer) return copier_layer.error().context("the seed image's copier layer");
  b.copier_layer = std::move(*copier_layer);

  // Every directory, parents first (sorted paths put a parent before its
  // children), then the files: the layer is the same bytes for the same copy.
  std::set<std::string> dirs = {"seed"};
  auto add_parents = [&](const std::string& p) {
    for (auto slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
      dirs.insert("seed/" + p.substr(0, slash));
    }
  };
  for (const auto& f : files) add_parents(f.path);
  for (const auto& d : empty_dirs) {
    add_parents(d);
    dirs.insert("seed/" + d);
  }
  std::vector<TarEntry> entries;
  entries.reserve(dirs.size() + files.size());
  for (const auto& d : dirs) entries.push_back({d, "", 0755, true});
  for (const auto& f : files) entries.push_back({"seed/" + f.path, f.content, f.mode, false});
  auto seed_layer = write_tar(entries);
  if (!seed_layer) return seed_layer.error().context("the seed image's seed layer");
  b.seed_layer = std::move(*seed_layer);

  SeedImage& img = b.image;
  img.copier_digest = seed_blob_digest(b.copier_layer);
  img.layer_digest = seed_blob_digest(b.seed_layer);
  img.copier_bytes = b.copier_layer.size();
  img.layer_bytes = b.seed_layer.size();
  img.seed_bytes = total;
  img.files = files.size();
  constexpr std::uint64_t kBlock = 4096;
  img.disk_bytes = dirs.size() * kBlock;
  for (const auto& f : files) img.disk_bytes += (f.content.size() + kBlock - 1) / kBlock * kBlock;
  const ordered_json config = {
      {"architecture", seed_image_arch()},
      {"os", "linux"},
      {"config", {{"Entrypoint", {kSeedCopier}}, {"WorkingDir", "/"}, {"User", "65534"}}},
      {"rootfs", {{"type", "layers"}, {"diff_ids", {img.copier_digest, img.layer_digest}}}}};
  b.config = config.dump();
  img.config_digest = seed_blob_digest(b.config);
  ordered_json manifest = {
      {"schemaVersion", 2},
      {"mediaType", kOciManifestType},
      {"config", {{"mediaType", kSeedConfigType}, {"digest", img.config_digest}, {"size", b.config.size()}}},
      {"layers",
       {{{"mediaType", kSeedLayerType}, {"digest", img.copier_digest}, {"size", img.copier_bytes}},
        {{"mediaType", kSeedLayerType}, {"digest", img.layer_digest}, {"size", img.layer_bytes}}}}};
  for (const auto& [k, v] : annotations) manifest["annotations"][k] = v;
  b.manifest = manifest.dump();
  img.digest = seed_blob_digest(b.manifest);
  img.repo = kSeedImageRepo;
  return b;
}

Result<SeedImage> push_seed_image(RegistryClient& reg, const SeedImageBlobs& blobs, const std::string& tag) {
  SeedImage img = blobs.image;
  img.address = reg.connection().address;
  img.tag = tag;
  for (const auto& [digest, bytes] : {std::pair{img.copier_digest, &blobs.copier_layer},
                                      std::pair{img.layer_digest, &blobs.seed_layer},
                                      std::pair{img.config_digest, &blobs.config}}) {
    if (auto st = reg.push_blob(img.repo, digest, *bytes); !st) return st.error().context("pushing the seed image");
  }
  auto d = reg.put_manifest(img.repo, tag, blobs.manifest, kOciManifestType);
  if (!d) return d.error().context("pushing the seed image");
  if (*d != img.digest) return engine_error("pushing the seed image: manifest digest " + *d + ", expected " + img.digest);
  return img;
}

Status verify_seed_image(RegistryClient& reg, const SeedImage& img) {
  const std::string where = "the seed image " + img.reference() + ": ";
  auto m = reg.get_manifest(img.repo, img.digest, kOciManifestType);
  if (!m) return m.error().context("verifying the seed image");
  if (!*m) return engine_error(where + "the registry has no such manifest (deleted?)");
  if (seed_blob_digest(**m) != img.digest) {
    return engine_error(where + "the registry served a manifest whose sha256 is " + seed_blob_digest(**m) +
                        ": refusing the run");
  }
  const json man = json::parse(**m, nullptr, false);
  const std::vector<std::pair<std::string, std::uint64_t>> want = {{img.copier_digest, img.copier_bytes},
                                                                   {img.layer_digest, img.layer_bytes}};
  std::vector<std::pair<std::string, std::uint64_t>> got;
  if (man.is_object() && man.contains("layers") && man["layers"].is_array()) {
    for (const auto& l : man["layers"]) got.emplace_back(l.value("digest", ""), l.value("size", 0ull));
  }
  if (got != want || man.value("/config/digest"_json_pointer, std::string()) != img.config_digest) {
    return engine_error(where + "the manifest names other layers than were pushed: refusing the run");
  }
  for (const auto& [digest, size] : want) {
    auto blob = reg.get_blob(img.repo, digest, size + 1);
    if (!blob) return blob.error().context("verifying the seed image");
    if (blob->size() != size || seed_blob_digest(*blob) != digest) {
      return engine_error(where + "the registry served layer " + digest + " as " + std::to_string(blob->size()) +
                          " bytes hashing to " + seed_blob_digest(*blob) + ": its content was replaced, refusing the run");
    }
  }
  return ok_status();
}

bool seed_image_expired(const json& annotations, std::int64_t ttl_seconds, std::int64_t now) {
  const json pushed = annotations.is_object() ? annotations.value(kAnnotationPushed, json()) : json();
  if (!pushed.is_string()) return false;
  const std::string& text = pushed.get_ref<const std::string&>();
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  return now - std::stoll(text) > ttl_seconds;
}

Result<std::vector<std::string>> reap_seed_images(RegistryClient& reg, bool all, std::vector<std::string>* left,
                                                  std::int64_t ttl_seconds, std::int64_t now) {
  std::vector<std::string> removed;
  auto tags = reg.tags(kSeedImageRepo);
  if (!tags) return tags.error().context("reaping the registry");
  for (const auto& tag : *tags) {
    auto m = reg.get_manifest(kSeedImageRepo, tag, kOciManifestType);
    if (!m) return m.error().context("reaping the registry");
    if (!*m) continue;
    const json man = json::parse(**m, nullptr, false);
    const json ann = man.is_object() ? man.value("annotations", json::object()) : json::object();
    if (!all && !seed_image_expired(ann, ttl_seconds, now) && owner_alive(owner_labels_from_k8s(ann))) {
      if (left) left->push_back(std::string(kSeedImageRepo) + ":" + tag);
      continue;
    }
    const std::string digest = "sha256:" + sha256_hex(**m);
    if (auto st = reg.delete_manifest(kSeedImageRepo, digest); !st) return st.error().context("reaping the registry");
    removed.push_back(std::string(kSeedImageRepo) + ":" + escape_for_terminal(tag) + "@" + digest);
  }
  return removed;
}

}  // namespace lazyagent
