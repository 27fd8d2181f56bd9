#include "util/path_glob.h"

namespace lazyagent {

namespace {

// One component against one pattern component: '*', '?', classes. Greedy with
// one backtrack point (the last '*'), so O(len(p) * len(s)) at worst.
bool class_match(std::string_view p, std::size_t& i, char c) {
  // p[i] == '['; on return i is past the closing ']'.
  std::size_t j = i + 1;
  bool negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  bool hit = false, first = true;
  for (; j < p.size() && (first || p[j] != ']'); first = false) {
    char lo = p[j], hi = p[j];
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      hi = p[j + 2];
      j += 3;
    } else {
      ++j;
    }
    if (lo <= c && c <= hi) hit = true;
  }
  i = j + 1;
  return hit != negate;
}

bool component_match(std::string_view p, std::string_view s) {
  std::size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      star_p = pi;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      std::size_t next = pi;
      bool ok = false;
      if (p[pi] == '[') {
        ok = class_match(p, next, s[si]);
      } else if (p[pi] == '?') {
        ok = true;
        next = pi + 1;
      } else if (p[pi] == '\\' && pi + 1 < p.size()) {
        ok = p[pi + 1] == s[si];
        next = pi + 2;
      } else {
        ok = p[pi] == s[si];
        next = pi + 1;
      }
      if (ok) {
        pi = next;
        ++si;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = s.find('/', start);
    out.push_back(s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// Components of the pattern against components of the path; "**" takes any
// number. Memoised over (pattern part, path part): linear in their product.
bool parts_match(const std::vector<std::string>& pat, const std::vector<std::string_view>& path) {
  const std::size_t P = pat.size(), S = path.size();
  // ok[i][j]: pat[i..] matches path[j..]
  std::vector<std::vector<char>> ok(P + 1, std::vector<char>(S + 1, 0));
  ok[P][S] = 1;
  for (std::size_t i = P; i-- > 0;) {
    for (std::size_t j = S + 1; j-- > 0;) {
      if (pat[i] == "**") {
        ok[i][j] = ok[i + 1][j] || (j < S && ok[i][j + 1]);
      } else {
        ok[i][j] = j < S && component_match(pat[i], path[j]) && ok[i + 1][j + 1];
      }
    }
  }
  return ok[0][0] != 0;
}

}  // namespace

PathGlob::PathGlob(std::string_view pattern) : pattern_(pattern) {
  std::string_view p = pattern;
  if (p.size() > 1 && p.back() == '/') {
    dir_only_ = true;
    p.remove_suffix(1);
  }
  if (!p.empty() && p.front() == '/') {
    p.remove_prefix(1);
  } else {
    any_depth_ = p.find('/') == std::string_view::npos;
  }
  for (std::string_view part : split(p)) parts_.emplace_back(part);
}

bool PathGlob::matches(std::string_view path, bool is_dir) const {
  if (dir_only_ && !is_dir) return false;
  if (any_depth_) {
    const std::size_t slash = path.rfind('/');
    return component_match(parts_.front(), slash == std::string_view::npos ? path : path.substr(slash + 1));
  }
  return parts_match(parts_, split(path));
}

std::string glob_problem(std::string_view pattern) {
  if (pattern.empty()) return "a glob pattern must not be empty";
  if (pattern.size() > 1024) return "a glob pattern must be at most 1024 bytes";
  if (pattern == "/" ) return "'/' would exclude the whole seed";
  for (const char c : pattern) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "a glob pattern must not hold control characters";
  }
  if (pattern.front() == '!') return "negated patterns ('!') are not supported";
  std::string_view p = pattern;
  if (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  if (!p.empty() && p.front() == '/') p.remove_prefix(1);
  for (std::string_view part : split(p)) {
    if (part.empty()) return "'" + std::string(pattern) + "' has an empty component ('//')";
    if (part == "." || part == "..") return "'" + std::string(pattern) + "' has a '" + std::string(part) + "' component";
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (part[i] == '\\') {
        ++i;
        continue;
      }
      if (part[i] != '[') continue;
      std::size_t j = i + 1;
      if (j < part.size() && (part[j] == '!' || part[j] == '^')) ++j;
      if (j < part.size() && part[j] == ']') ++j;
      while (j < part.size() && part[j] != ']') ++j;
      if (j >= part.size()) return "'" + std::string(pattern) + "' has a '[' without its ']'";
      i = j;
    }
  }
  return "";
}

bool path_excluded(const std::vector<PathGlob>& globs, std::string_view path, bool is_dir) {
  if (globs.empty()) return false;
  for (std::size_t slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1)) {
    for (const PathGlob& g : globs) {
      if (g.matches(path.substr(0, slash), true)) return true;
    }
  }
  for (const PathGlob& g : globs) {
    if (g.matches(path, is_dir)) return true;
  }
  return false;
}

std::vector<PathGlob> compile_globs(const std::vector<std::string>& patterns) {
  std::vector<PathGlob> out;
  out.reserve(patterns.size());
  for (const auto& p : patterns) out.emplace_back(p);
  return out;
}

}  // namespace lazyagent
