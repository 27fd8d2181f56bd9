#include "eval/swe_bench.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "contract/patch_contract.h"
#include "util/terminal_text.h"

namespace lazyagent {

namespace {

using nlohmann::json;

struct SeedMapEntry {
  std::string seed, test_command, image;
  std::vector<std::string> allow;
  bool has_allow = false;
};

std::string quote_id(const std::string& s) {
  bool cut = false;
  return "'" + truncate_utf8(escape_for_terminal(to_valid_utf8(s)), 80, cut) + (cut ? "...'" : "'");
}

bool read_map(std::string_view text, const std::string& dir, std::map<std::string, SeedMapEntry>* out,
              std::vector<TaskLineError>* errors) {
  const json m = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    errors->push_back({0, task_reason::kBadSeedMap, "the seed map " + why});
    return false;
  };
  if (!m.is_object()) return bad("must be a JSON object of instance id -> seed");
  auto resolve = [&](const std::string& p) { return p.empty() || p[0] == '/' ? p : dir + "/" + p; };
  for (const auto& [id, v] : m.items()) {
    SeedMapEntry e;
    if (v.is_string()) {
      e.seed = resolve(v.get<std::string>());
    } else if (v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        if (k == "allow" && x.is_array() && std::all_of(x.begin(), x.end(), [](const json& a) { return a.is_string(); })) {
          e.allow = x.get<std::vector<std::string>>();
          e.has_allow = true;
        } else if ((k == "seed" || k == "test_command" || k == "image") && x.is_string() && !x.get<std::string>().empty()) {
          (k == "seed" ? e.seed : k == "test_command" ? e.test_command : e.image) = x.get<std::string>();
        } else {
          bad("entry " + quote_id(id) + " has a bad or unknown key " + quote_id(k) +
              " (keys: seed, test_command, allow, image; strings, allow a list of strings)");
        }
      }
      e.seed = resolve(e.seed);
    } else {
      bad("entry " + quote_id(id) + " must be a seed path or an object");
      continue;
    }
    if (e.seed.empty()) bad("entry " + quote_id(id) + " names no seed");
    (*out)[id] = std::move(e);
  }
  return errors->empty();
}

}  // namespace

ParsedTasks parse_swe_bench_predictions(std::string_view predictions, std::string_view seed_map,
                                        const std::string& map_dir) {
  ParsedTasks out;
  std::map<std::string, SeedMapEntry> map;
  if (!read_map(seed_map, map_dir, &map, &out.errors)) return out;
  // One array, or one object per line.
  std::vector<std::pair<std::size_t, json>> items;
  const std::size_t first = predictions.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && predictions[first] == '[') {
    const json all = json::parse(predictions, nullptr, false);
    if (!all.is_array()) {
      out.errors.push_back({1, task_reason::kMalformedJson, "the predictions file starts with '[' but is not a JSON array"});
      return out;
    }
    for (std::size_t i = 0; i < all.size(); ++i) items.emplace_back(i + 1, all[i]);
  } else {
    std::size_t line = 0, pos = 0;
    while (pos < predictions.size()) {
      std::size_t end = predictions.find('\n', pos);
      if (end == std::string_view::npos) end = predictions.size();
      const std::string_view raw = predictions.substr(pos, end - pos);
      pos = end + 1;
      ++line;
      if (raw.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      if (raw.size() > kMaxTaskLineBytes) {
        out.errors.push_back({line, task_reason::kLineTooLong, "the line is longer than " + std::to_string(kMaxTaskLineBytes) + " bytes"});
        continue;
      }
      json j = json::parse(raw, nullptr, false);
      if (j.is_discarded()) {
        out.errors.push_back({line, task_reason::kMalformedJson, "not JSON"});
        continue;
      }
      items.emplace_back(line, std::move(j));
    }
  }
  std::set<std::string> ids;
  for (auto& [line, j] : items) {
    if (!j.is_object()) {
      out.errors.push_back({line, task_reason::kNotAnObject, "a prediction must be a JSON object"});
      continue;
    }
    const json id = j.value("instance_id", json());
    if (!id.is_string() || id.get<std::string>().empty()) {
      out.errors.push_back({line, task_reason::kBadType, "'instance_id' must be a non-empty string"});
      continue;
    }
    const json patch = j.value("model_patch", json());
    if (!patch.is_string() && !patch.is_null()) {
      out.errors.push_back({line, task_reason::kBadType, "'model_patch' must be a string (a unified diff) or null"});
      continue;
    }
    EvalTask t;
    t.line = line;
    t.id = id.get<std::string>();
    t.patch_json = patch.is_string() ? patch.get<std::string>() : "";
    if (!valid_task_id(t.id)) {
      out.errors.push_back({line, task_reason::kBadId, "instance " + quote_id(t.id) +
                                                         " cannot name a result file (1-64 characters of [A-Za-z0-9._-])"});
      continue;
    }
    if (!ids.insert(t.id).second) {
      out.errors.push_back({line, task_reason::kDuplicateId, "instance " + quote_id(t.id) + " is predicted more than once"});
      continue;
    }
    const auto m = map.find(t.id);
    if (m == map.end()) {
      out.errors.push_back({line, task_reason::kNoSeedMapping, "instance " + quote_id(t.id) + " has no entry in the seed map"});
      continue;
    }
    t.seed = m->second.seed;
    t.test_command = m->second.test_command;
    t.image = m->second.image;
    t.allow = m->second.allow;
    t.has_allow = m->second.has_allow;
    out.tasks.push_back(std::move(t));
  }
  if (out.tasks.empty() && out.errors.empty()) out.errors.push_back({0, task_reason::kNoTasks, "the predictions file holds no prediction"});
  std::stable_sort(out.errors.begin(), out.errors.end(),
                   [](const TaskLineError& a, const TaskLineError& b) { return a.line < b.line; });
  return out;
}

}  // namespace lazyagent
