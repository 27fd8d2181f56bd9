#include "engine/podman/environment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "util/digest.h"
#include "util/terminal_text.h"
#include "store/ownership.h"
#include "engine/podman/egress_proxy.h"
#include "engine/podman/log_stream.h"
#include "engine/podman/podman_client.h"
#include "engine/podman/rootless_host.h"
#include "util/tar_writer.h"
#include "policy/setup_egress_probe.h"
#include "util/package_mirrors.h"
#include "util/file_lock.h"
#include "util/runtime_dir.h"

namespace lazyagent {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxEnvironmentInputBytes = 64u << 20;
constexpr const char* kEnvStepMarker = "::lazyagent-env step ";
constexpr const char* kEnvFailedMarker = "::lazyagent-env failed ";

struct InputReader {
  std::string seed;
  std::string key_path;  // environment.inputs[i]
  std::size_t total = 0;
  std::vector<EnvironmentInput>* out;

  Status fail(const std::string& rel, const std::string& why) const {
    return usage_error(key_path + ": " + rel + ": " + why);
  }

  // rel: a seed-relative path whose every component was lstat'ed already.
  Status add(const std::string& rel, int depth) {
    if (depth > 64) return fail(rel, "directories nested deeper than 64");
    const std::string full = seed + "/" + rel;
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) return fail(rel, errno == ENOENT ? "no such file in the seed" : std::strerror(errno));
    if (S_ISLNK(st.st_mode)) return fail(rel, "a symbolic link (inputs are read without following links)");
    if (S_ISDIR(st.st_mode)) {
      DIR* d = ::opendir(full.c_str());
      if (d == nullptr) return fail(rel, std::strerror(errno));
      std::vector<std::string> names;
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
      }
      ::closedir(d);
      std::sort(names.begin(), names.end());
      for (const auto& n : names) {
        if (auto s = add(rel + "/" + n, depth + 1); !s) return s;
      }
      return ok_status();
    }
    if (!S_ISREG(st.st_mode)) return fail(rel, "not a regular file or directory");
    const int fd = ::open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return fail(rel, std::strerror(errno));
    EnvironmentInput in;
    in.path = rel;
    in.mode = (st.st_mode & 0111) ? 0755 : 0644;
    char buf[65536];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) {
      in.content.append(buf, static_cast<std::size_t>(n));
      if (total + in.content.size() > kMaxEnvironmentInputBytes) {
        ::close(fd);
        return fail(rel, "the inputs hold more than 64 MiB in all (name the lock files, not the project)");
      }
    }
    const int err = errno;
    ::close(fd);
    if (n < 0) return fail(rel, std::strerror(err));
    total += in.content.size();
    in.sha256 = sha256_hex(in.content);
    out->push_back(std::move(in));
    return ok_status();
  }
};

// "a/b/c" -> every proper prefix must be a real directory (no symlink).
Status check_parents(const std::string& seed, const std::string& rel, const std::string& key_path) {
  std::size_t pos = 0;
  while ((pos = rel.find('/', pos)) != std::string::npos) {
    const std::string prefix = rel.substr(0, pos);
    struct stat st {};
    const std::string full = seed + "/" + prefix;
    if (::lstat(full.c_str(), &st) != 0) return usage_error(key_path + ": " + rel + ": no such file in the seed");
    if (S_ISLNK(st.st_mode)) return usage_error(key_path + ": " + rel + ": " + prefix + " is a symbolic link");
    if (!S_ISDIR(st.st_mode)) return usage_error(key_path + ": " + rel + ": " + prefix + " is not a directory");
    ++pos;
  }
  return ok_status();
}

// The last `max_lines` lines of `text`.
std::string last_lines(const std::string& text, std::size_t max_lines) {
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  std::size_t pos = end, lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
    --pos;
  }
  std::string out = text.substr(pos, end - pos);
  if (out.size() > 8192) out = "..." + out.substr(out.size() - 8192);
  return out;
}

std::string base_image(const Config& config) {
  return config.environment.base.empty() ? config.images.sandbox : config.environment.base;
}

}  // namespace

Result<std::vector<EnvironmentInput>> read_environment_inputs(const EnvironmentConfig& env, const std::string& seed_dir) {
  std::vector<EnvironmentInput> out;
  InputReader reader{seed_dir, "", 0, &out};
  for (std::size_t i = 0; i < env.inputs.size(); ++i) {
    std::string rel = env.inputs[i];
    while (rel.size() > 1 && rel.back() == '/') rel.pop_back();
    reader.key_path = "environment.inputs[" + std::to_string(i) + "]";
    if (auto st = check_parents(seed_dir, rel, reader.key_path); !st) return st.error();
    if (auto st = reader.add(rel, 0); !st) return st.error();
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (out[i].path == out[i - 1].path) out[i - 1].path.clear();  // named twice (a file and its directory)
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& in) { return in.path.empty(); }), out.end());
  return out;
}

std::string environment_key(const EnvironmentConfig& env, const std::string& base, const std::string& base_id,
                            const std::vector<EnvironmentInput>& inputs) {
  json files = json::array();
  for (const auto& in : inputs) files.push_back({{"path", in.path}, {"mode", in.mode}, {"sha256", in.sha256}});
  json doc = {{"version", 1},     {"base", base},         {"base_id", base_id},
                    {"setup", env.setup}, {"network", env.network}, {"inputs", files}};
  // The allow-list is part of the key only when given (older keys stay).
  if (!env.egress.empty()) {
    json with = doc;
    with["egress"] = env.egress;
    return sha256_hex(with.dump()).substr(0, 32);
  }
  return sha256_hex(doc.dump()).substr(0, 32);
}

std::vector<std::string> setup_command(const std::vector<std::string>& steps) {
  // Everything on stdout, in order; each step in its own shell, from
  // /lazyagent-env; the first failure stops the set-up with its exit code.
  std::vector<std::string> cmd = {
      "/bin/sh", "-c",
      std::string("exec 2>&1; n=0; for s in \"$@\"; do n=$((n+1)); echo \"") + kEnvStepMarker +
          "$n::\"; cd /lazyagent-env && /bin/sh -c \"$s\"; rc=$?; if [ $rc -ne 0 ]; then echo \"" + kEnvFailedMarker +
          "$n $rc::\"; exit $rc; fi; done",
      "lazyagent-env"};
  cmd.insert(cmd.end(), steps.begin(), steps.end());
  return cmd;
}

std::size_t last_setup_step(const std::string& output, std::size_t* output_from) {
  std::size_t step = 0, from = 0, pos = 0;
  while ((pos = output.find(kEnvStepMarker, pos)) != std::string::npos) {
    const std::size_t num = pos + std::strlen(kEnvStepMarker);
    step = static_cast<std::size_t>(std::strtoul(output.c_str() + num, nullptr, 10));
    const std::size_t eol = output.find('\n', pos);
    from = eol == std::string::npos ? output.size() : eol + 1;
    pos = num;
  }
  if (output_from != nullptr) *output_from = from;
  return step;
}

std::string setup_failure_message(const std::vector<std::string>& steps, const std::string& output, int exit_code) {
  // The output since the last step marker is the failing step's.
  std::size_t from = 0;
  const std::size_t step = last_setup_step(output, &from);
  std::string log = output.substr(from);
  if (const std::size_t f = log.find(kEnvFailedMarker); f != std::string::npos) log.erase(f);
  std::string msg;
  if (step >= 1 && step <= steps.size()) {
    msg = "environment: set-up step " + std::to_string(step) + " of " + std::to_string(steps.size()) +
          " failed with exit code " + std::to_string(exit_code) + ": " + steps[step - 1];
  } else {
    msg = "environment: the set-up container exited " + std::to_string(exit_code) + " before its first step";
  }
  const std::string tail = last_lines(log, 40);
  msg += tail.empty() ? "\n(the step printed nothing)" : "\n--- the step's output (last lines) ---\n" + tail;
  return msg;
}

json setup_container_spec(const EnvironmentConfig& env, const std::string& base, const std::string& name,
                          const std::map<std::string, std::string>& labels) {
  json spec = {
      {"image", base},
      {"name", name},
      {"labels", labels},
      {"command", setup_command(env.setup)},
      {"env",
       {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOME", "/root"},
        {"LANG", "C.UTF-8"},
        {"DEBIAN_FRONTEND", "noninteractive"}}},
      {"work_dir", "/"},
      {"netns", {{"nsmode", env.network == "none" ? "none" : "bridge"}}},
      {"cap_drop", {"CAP_SYS_CHROOT", "CAP_SETFCAP", "CAP_MKNOD", "CAP_NET_RAW", "CAP_AUDIT_WRITE", "CAP_SETPCAP",
                    "CAP_NET_BIND_SERVICE"}},
      {"r_limits", {{{"type", "nofile"}, {"soft", 4096}, {"hard", 4096}},
                    {{"type", "nproc"}, {"soft", 4096}, {"hard", 4096}}}},
      {"resource_limits", {{"pids", {{"limit", 4096}}}}},
      {"log_configuration", {{"driver", "k8s-file"}}},
      {"stop_timeout", 5},
  };
  return spec;
}

namespace {

// What the set-up's egress probe tries directly: this machine's own IPv4
// addresses (the podman gateway among them; loopback aside: the container's
// own), from host_probe_targets (package_mirrors.h), at most 8.
std::vector<std::string> probe_targets() {
  std::vector<std::string> out;
  for (const auto& t : host_probe_targets()) {
    const std::size_t eq = t.find('=');
    const std::string a = t.substr(eq + 1, t.rfind(':') - eq - 1);
    if (std::find(out.begin(), out.end(), a) == out.end() && out.size() < 8) out.push_back(a);
  }
  return out;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The step (1-based) running at `t`, from the steps' start times; 0 before the first.
std::size_t step_at(const std::vector<double>& started, double t) {
  std::size_t step = 0;
  for (std::size_t i = 0; i < started.size(); ++i) {
    if (started[i] > 0 && started[i] <= t + 0.5) step = i + 1;  // squid logs at ms; a clock step of slack
  }
  return step;
}

// A comma-joined list bounded for an image label.
std::string label_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    if (out.size() + i.size() + 1 > 4000) return out + ",...";
    out += (out.empty() ? "" : ",") + i;
  }
  return out;
}

Status build_environment(PodmanClient& podman, const EnvironmentConfig& env, const std::string& base,
                         const std::string& key, const std::vector<EnvironmentInput>& inputs,
                         const std::function<void(const std::string&)>& progress, EnvironmentConfig::Resolved* out) {
  const Owner owner = current_owner();
  auto labels = owner_labels(owner, "envbuild", "env-" + key.substr(0, 12));
  const std::string name = "lazyagent-envbuild-" + key.substr(0, 12) + "-" + std::to_string(owner.pid);
  json spec = setup_container_spec(env, base, name, labels);
  std::unique_ptr<EgressProxy> proxy;
  if (!env.egress.empty()) {
    std::vector<EgressEntry> entries;
    for (const auto& e : env.egress) entries.push_back(parse_egress_entry(e));
    auto proxy_labels = owner_labels(owner, "egress-proxy", "env-" + key.substr(0, 12));
    auto started = EgressProxy::start(podman, entries, "lazyagent-egress-" + key.substr(0, 12) + "-" + std::to_string(owner.pid),
                                      kEgressProxyImage, proxy_labels);
    if (!started) return started.error().context("environment: environment.egress");
    proxy = std::move(*started);
    attach_to_egress_network(&spec, proxy->network(), proxy->address());
    // The probe first, in the set-up's own container (setup_egress_probe.h).
    spec["command"][2] = setup_egress_probe_shell(env.egress, probe_targets()) + spec["command"][2].get<std::string>();
    progress("environment: egress allow-list (" + std::to_string(entries.size()) + " entr" +
             (entries.size() == 1 ? "y" : "ies") + ") through the proxy at " + proxy->address() + " on network " +
             proxy->network());
  }
  std::vector<double> step_started(env.setup.size(), 0.0);
  auto created = podman.create(spec);
  if (!created) return created.error().context("environment: creating the set-up container from " + base);
  ScopedContainer box(podman, created->id);

  std::vector<TarEntry> entries;
  entries.push_back({"lazyagent-env", "", 0755, true});
  for (const auto& in : inputs) {
    // Parent directories first (the tar writer writes what it is given).
    std::size_t pos = 0;
    while ((pos = in.path.find('/', pos)) != std::string::npos) {
      const std::string dir = "lazyagent-env/" + in.path.substr(0, pos);
      bool have = false;
      for (const auto& e : entries) have = have || (e.directory && e.path == dir);
      if (!have) entries.push_back({dir, "", 0755, true});
      ++pos;
    }
    entries.push_back({"lazyagent-env/" + in.path, in.content, in.mode, false});
  }
  auto tar = write_tar(entries);
  if (!tar) return tar.error().context("environment: packing the inputs");
  if (auto st = podman.put_archive(box.id(), "/", *tar); !st) return st.error().context("environment: uploading the inputs");
  if (auto st = podman.start(box.id()); !st) return st.error().context("environment: starting the set-up");

  FollowedLog log;  // log_stream.h
  log.line = [&](const std::string& raw) {
    const std::string l = without_trailing_cr(raw);  // apt's and pip's CRLF and progress lines
    if (l.rfind(kEnvStepMarker, 0) == 0) {
      const std::size_t n = std::strtoul(l.c_str() + std::strlen(kEnvStepMarker), nullptr, 10);
      if (n >= 1 && n <= env.setup.size()) {
        step_started[n - 1] = wall_seconds();
        progress("environment: step " + std::to_string(n) + "/" + std::to_string(env.setup.size()) + ": " +
                 env.setup[n - 1]);
      }
      return;
    }
    if (l.rfind(kEnvFailedMarker, 0) == 0) return;
    if (l.rfind(kEgressProbeMarker, 0) == 0) {
      progress("environment: egress probe: " + l.substr(std::strlen(kEgressProbeMarker)));
      return;
    }
    progress("  | " + l);
  };
  const long deadline_ms = static_cast<long>(env.timeout_seconds) * 1000;
  const auto t0 = std::chrono::steady_clock::now();
  auto followed = podman.stream_get("/containers/" + box.id() + "/logs?follow=true&stdout=true&stderr=true",
                                    [&](std::string_view c) { log.feed(c); }, deadline_ms, "environment: following the set-up");
  log.finish();
  if (!followed) {
    (void)podman.kill(box.id());
    if (followed.error().kind == ErrorKind::kTimeout) {
      return engine_error("environment: the set-up did not finish within environment.timeout_seconds (" +
                          std::to_string(env.timeout_seconds) + " s)\n" + last_lines(log.all, 20));
    }
    return followed.error();
  }
  const long spent = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  auto code = podman.wait(box.id(), std::max(10000L, deadline_ms - spent));
  if (!code) return code.error().context("environment: waiting for the set-up");
  std::string denial;
  if (proxy) {
    auto requests = proxy->requests();
    if (!requests) return requests.error().context("environment");
    const EgressOutcome outcome = summarize_egress(*requests);
    out->egress_reached = outcome.reached;
    // The probe's own refused request is in its attempts, not a denial of the set-up's.
    for (const auto& d : outcome.denied) {
      if (d == kEgressProbeTarget) continue;
      out->egress_denied.push_back(d);
      progress("environment: egress denied: " + d);
    }
    // Name the denials of the step that failed (by time), else all of them.
    // The probe's own refused request is the probe's (its attempts record
    // it), not a step's: it runs a moment before step 1, within step_at's
    // slack of a quick step 1 and 2, and was blamed on step 2.
    std::vector<std::string> denied_in_step, denied_to_steps;
    const std::size_t failed = last_setup_step(log.all, nullptr);
    for (const auto& r : *requests) {
      if (!r.denied() || r.host_port() == kEgressProbeTarget) continue;
      if (std::find(denied_to_steps.begin(), denied_to_steps.end(), r.host_port()) == denied_to_steps.end())
        denied_to_steps.push_back(r.host_port());
      if (step_at(step_started, r.time) == failed &&
          std::find(denied_in_step.begin(), denied_in_step.end(), r.host_port()) == denied_in_step.end())
        denied_in_step.push_back(r.host_port());
    }
    denial = denied_in_step.empty() ? egress_denial_message(denied_to_steps, 0) : egress_denial_message(denied_in_step, failed);
  }
  if (proxy) {
    const SetupEgressProbe probe = parse_setup_egress_probe(log.all);
    for (const auto& [n, o] : probe.attempts) out->egress_probe_attempts.push_back(n + " " + o);
    if (!probe.ways_out.empty() || (*code == kEgressProbeExit && last_setup_step(log.all, nullptr) == 0)) {
      std::string list;
      for (const auto& w : probe.ways_out) list += "\n  " + w;
      return Error{ErrorKind::kIsolation,
                   "environment: the egress probe found a way out of the set-up's network, so the environment is "
                   "refused (no step ran):" + (list.empty() ? std::string("\n  (the probe did not finish)") : list)};
    }
    out->egress_probe = !probe.ran ? "not run" : probe.runner != "python3" ? "not observable (no python3 in the base image)"
                                                                           : "enforced";
  }
  if (*code != 0) {
    const std::string msg = setup_failure_message(env.setup, log.all, *code);
    return engine_error(denial.empty() ? msg : "environment: " + denial + "\n" + msg);
  }
  // A rebuild moves the tag: the image it leaves untagged is removed (when no
  // container uses it), not left behind as a nameless environment.
  std::string previous;
  if (auto old = podman.call("GET", "/images/" + url_escape(std::string(kEnvironmentRepo) + ":" + key) + "/json");
      old && old->status == 200) {
    const auto j = nlohmann::json::parse(old->body, nullptr, false);
    if (j.is_object()) previous = j.value("Id", "");
  }
  std::vector<std::string> changes = {
      "LABEL io.lazyagent.role=environment", std::string("LABEL ") + kEnvironmentKeyLabel + "=" + key,
      "LABEL io.lazyagent.env.base=" + base, "WORKDIR /work",
      // The set-up container's owner labels are not the image's.
      "LABEL io.lazyagent.run=", "LABEL io.lazyagent.owner=", "LABEL io.lazyagent.pid=", "LABEL io.lazyagent.pidstart="};
  if (proxy) {
    out->egress_reached_sha256 = sha256_hex(json(out->egress_reached).dump());
    changes.push_back(std::string("LABEL ") + kEnvironmentEgressSumLabel + "=" + out->egress_reached_sha256);
    changes.push_back(std::string("LABEL ") + kEnvironmentEgressLabel + "=" + label_list(out->egress_reached));
  }
  auto id = podman.commit(box.id(), kEnvironmentRepo, key, changes);
  if (!id) return id.error().context("environment");
  if (!previous.empty() && previous != *id) (void)podman.image_remove(previous);
  if (auto st = box.remove_now(); !st) return st.error().context("environment: removing the set-up container");
  if (proxy) {
    if (auto st = proxy->remove(); !st) return st.error().context("environment");
  }
  return ok_status();
}

// Held while this machine builds the environment of one key: a second `test`,
// `eval` or `env build` of the same project (another terminal, a CI job beside
// it) waits for the first build and then reuses its image, instead of
// building it again and re-tagging it under the first one's feet. The lock
// lives in this user's private runtime directory (runtime_dir.h); without one
// (or on EINTR) there is no lock and only the duplicate build is the cost.
void lock_environment_build(const std::string& key, const std::function<void(const std::string&)>& progress,
                            std::optional<FileLock>* lock) {
  auto dir = private_runtime_dir(std::getenv("XDG_RUNTIME_DIR"));
  if (!dir) return;
  const std::string path = *dir + "/env-" + key + ".lock";
  lock->emplace(path, [&] {
    progress("environment: another process is building " + std::string(kEnvironmentRepo) + ":" + key +
             " on this machine; waiting for it (lock " + path + ")");
  });
}

Result<bool> environment_image_exists(PodmanClient& podman, const std::string& image) {
  auto r = podman.call("GET", "/images/" + url_escape(image) + "/json");
  if (!r) return r.error();
  return r->status == 200;
}

}  // namespace

Status resolve_environment(PodmanClient& podman, Config* config, bool rebuild,
                           const std::function<void(const std::string&)>& progress) {
  EnvironmentConfig& env = config->environment;
  if (!env.present) return ok_status();
  if (!env.containerfile.empty()) {
    return usage_error("environment.containerfile: not supported with podman 4.3: its build API runs RUN steps as "
                       "the host's root in the host's network namespace (chroot isolation, whatever the request "
                       "asks), where a step could read the host; describe the image as base + setup + inputs");
  }
  if (config->seed.empty()) return usage_error("environment: the inputs are relative to the seed, and no seed is set");
  auto inputs = read_environment_inputs(env, config->seed);
  if (!inputs) return inputs.error();
  const std::string base = base_image(*config);
  auto base_img = podman.image_inspect(base, env.base.empty() ? "images.sandbox" : "environment.base");
  if (!base_img) return base_img.error();
  const std::string key = environment_key(env, base, base_img->value("Id", ""), *inputs);
  const std::string image = std::string(kEnvironmentRepo) + ":" + key;
  env.resolved = {};
  env.resolved.key = key;
  env.resolved.image = image;
  bool exists = false;
  if (!rebuild) {
    auto r = environment_image_exists(podman, image);
    if (!r) return r.error();
    exists = *r;
  }
  std::optional<FileLock> lock;
  if (!exists) {
    lock_environment_build(key, progress, &lock);
    if (!rebuild) {  // built by the process we waited for?
      auto r = environment_image_exists(podman, image);
      if (!r) return r.error();
      exists = *r;
    }
  }
  if (!exists && env.network != "none") {
    const std::string what = "the environment's set-up (environment.network: " + env.network + "; `none` needs no device)";
    if (auto st = check_rootless_network(rootless_host_of(podman.socket_path()), what); !st) return st;
  }
  if (!exists) {
    progress("environment: building " + image + " (" + std::to_string(env.setup.size()) + " set-up step(s) on " + base +
             ", network " + env.network + ", " + std::to_string(inputs->size()) + " input file(s))");
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = build_environment(podman, env, base, key, *inputs, progress, &env.resolved); !st) return st;
    env.resolved.built = true;
    env.resolved.build_ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    progress("environment: built " + image + " in " + std::to_string(env.resolved.build_ms) + " ms");
  } else {
    progress("environment: reusing " + image);
  }
  auto built = podman.image_inspect(image, "environment");
  if (!built) return built.error();
  // The same digest the result's image_digest is (podman_engine.cpp digest_of).
  env.resolved.digest = built->value("Digest", "");
  if (env.resolved.digest.empty()) env.resolved.digest = built->value("Id", "");
  env.resolved.id = built->value("Id", "");
  if (!env.egress.empty() && !env.resolved.built) {
    // A reused image: what its set-up reached, from its labels.
    const json image_labels = built->contains("Labels") && (*built)["Labels"].is_object() ? (*built)["Labels"] : json::object();
    env.resolved.egress_reached_sha256 = image_labels.value(kEnvironmentEgressSumLabel, "");
    const std::string list = image_labels.value(kEnvironmentEgressLabel, "");
    for (std::size_t from = 0; from < list.size();) {
      std::size_t comma = list.find(',', from);
      if (comma == std::string::npos) comma = list.size();
      if (comma > from) env.resolved.egress_reached.push_back(list.substr(from, comma - from));
      from = comma + 1;
    }
  }
  config->images.sandbox = image;
  return ok_status();
}

}  // namespace lazyagent
