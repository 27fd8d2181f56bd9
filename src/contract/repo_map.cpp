#include "contract/repo_map.h"

#include <cctype>

#include "util/terminal_text.h"

namespace lazyagent {

namespace {

enum class Lang { kNone, kPython, kGo, kC, kRust, kJs };

Lang lang_of(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) return Lang::kNone;
  const std::string_view ext = path.substr(dot + 1);
  if (ext == "py") return Lang::kPython;
  if (ext == "go") return Lang::kGo;
  if (ext == "c" || ext == "h" || ext == "cc" || ext == "cpp" || ext == "cxx" || ext == "hpp" || ext == "hh" ||
      ext == "hxx") {
    return Lang::kC;
  }
  if (ext == "rs") return Lang::kRust;
  if (ext == "js" || ext == "mjs" || ext == "cjs" || ext == "jsx" || ext == "ts" || ext == "tsx") return Lang::kJs;
  return Lang::kNone;
}

bool line_starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The line up to its body: before the first of `stops`, trailing spaces off, bounded.
std::string head_of(std::string_view line, std::string_view stops) {
  std::size_t end = stops.empty() ? std::string_view::npos : line.find_first_of(stops);
  std::string_view h = line.substr(0, end == std::string_view::npos ? line.size() : end);
  while (!h.empty() && std::isspace(static_cast<unsigned char>(h.back()))) h.remove_suffix(1);
  bool cut = false;
  std::string out = truncate_utf8(to_valid_utf8(h), kMaxDefinitionBytes, cut);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return cut ? out + "..." : out;
}

bool python_def(std::string_view l) { return line_starts(l, "def ") || line_starts(l, "async def ") || line_starts(l, "class "); }

bool go_def(std::string_view l) { return line_starts(l, "func ") || (line_starts(l, "type ") && !line_starts(l, "type (")); }

std::string_view rust_item(std::string_view l) {
  for (;;) {
    if (line_starts(l, "pub(")) {
      const std::size_t close = l.find(')');
      if (close == std::string_view::npos) return {};
      l.remove_prefix(close + 1);
    } else if (line_starts(l, "pub ")) {
      l.remove_prefix(4);
    } else if (line_starts(l, "async ")) {
      l.remove_prefix(6);
    } else if (line_starts(l, "unsafe ")) {
      l.remove_prefix(7);
    } else if (line_starts(l, "const fn ")) {
      l.remove_prefix(6);
    } else if (line_starts(l, "extern \"C\" ")) {
      l.remove_prefix(11);
    } else {
      break;
    }
    while (line_starts(l, " ")) l.remove_prefix(1);
  }
  return l;
}

bool rust_def(std::string_view l) {
  const std::string_view item = rust_item(l);
  for (std::string_view k : {"fn ", "struct ", "enum ", "trait ", "impl ", "impl<", "type ", "mod "}) {
    if (line_starts(item, k)) return true;
  }
  return false;
}

bool js_def(std::string_view l) {
  return line_starts(l, "function ") || line_starts(l, "function*") || line_starts(l, "async function") || line_starts(l, "class ") ||
         line_starts(l, "export ");
}

bool word_start(std::string_view l, std::string_view w) {
  return line_starts(l, w) && (l.size() == w.size() || !(std::isalnum(static_cast<unsigned char>(l[w.size()])) || l[w.size()] == '_'));
}

// A C/C++ definition starting at column 0 on lines[i]: a body opens ('{')
// before any ';' on it or the next few lines (parameters over several lines,
// Allman braces).
bool c_def(const std::vector<std::string_view>& lines, std::size_t i) {
  const std::string_view l = lines[i];
  if (l.empty() || std::isspace(static_cast<unsigned char>(l[0])) || l[0] == '#' || l[0] == '/' || l[0] == '*' ||
      l[0] == '}' || l[0] == '{') {
    return false;
  }
  for (std::string_view k : {"if", "for", "while", "switch", "return", "else", "do", "typedef", "using", "namespace",
                             "extern", "template", "public", "private", "protected", "case", "default"}) {
    if (word_start(l, k)) return false;
  }
  bool record = false;
  for (std::string_view k : {"struct ", "class ", "enum ", "union "}) record = record || line_starts(l, k);
  const std::size_t paren = l.find('(');
  if (!record && (paren == std::string_view::npos || paren == 0 || l.find('=') < paren)) return false;
  for (std::size_t j = i; j < lines.size() && j < i + 6; ++j) {
    const std::size_t brace = lines[j].find('{'), semi = lines[j].find(';');
    if (brace != std::string_view::npos && brace < semi) return true;
    if (semi != std::string_view::npos) return false;
    if (j > i && !lines[j].empty() && !std::isspace(static_cast<unsigned char>(lines[j][0])) && lines[j][0] != '{' &&
        lines[j][0] != ')') {
      return false;  // another column-0 line: this one was not a signature
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> top_level_definitions(std::string_view path, std::string_view content, std::size_t max) {
  const Lang lang = lang_of(path);
  std::vector<std::string> out;
  if (lang == Lang::kNone) return out;
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < content.size();) {
    std::size_t nl = content.find('\n', at);
    if (nl == std::string_view::npos) nl = content.size();
    std::string_view l = content.substr(at, nl - at);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    at = nl + 1;
  }
  for (std::size_t i = 0; i < lines.size() && out.size() < max; ++i) {
    const std::string_view l = lines[i];
    switch (lang) {
      case Lang::kPython:
        if (python_def(l)) {  // the whole line without its final ':' (annotations have colons)
          std::string_view h = l;
          while (!h.empty() && std::isspace(static_cast<unsigned char>(h.back()))) h.remove_suffix(1);
          if (!h.empty() && h.back() == ':') h.remove_suffix(1);
          out.push_back(head_of(h, ""));
        }
        break;
      case Lang::kGo:
        if (go_def(l)) out.push_back(head_of(l, "{"));
        break;
      case Lang::kRust:
        if (rust_def(l)) out.push_back(head_of(l, "{;"));
        break;
      case Lang::kJs:
        if (js_def(l)) out.push_back(head_of(l, "{="));
        break;
      case Lang::kC:
        if (c_def(lines, i)) out.push_back(head_of(l, "{"));
        break;
      case Lang::kNone:
        break;
    }
  }
  return out;
}

std::string repo_map(const SeedSnapshot& seed, const RepoMapLimits& limits) {
  if (limits.total_bytes == 0) return "";
  // Paths and sizes first: they are the map; definitions fill what is left.
  std::vector<const SeedEntry*> files;
  std::vector<std::string> heads;
  std::size_t used = 0, listed = 0;
  for (const auto& e : seed.entries) {
    if (e.kind != SeedEntry::Kind::kFile) continue;
    files.push_back(&e);
    std::string h = escape_for_terminal(e.path) + " (" + std::to_string(e.size) + " B)\n";
    if (listed == heads.size() && used + h.size() + 64 <= limits.total_bytes) {
      used += h.size();
      heads.push_back(std::move(h));
      ++listed;
    }
  }
  std::string map;
  for (std::size_t i = 0; i < listed; ++i) {
    map += heads[i];
    const SeedEntry& e = *files[i];
    if (lang_of(e.path) == Lang::kNone || e.size > limits.source_bytes || used >= limits.total_bytes) continue;
    auto content = read_seed_file(seed, e, limits.source_bytes);
    if (!content) continue;
    for (const auto& d : top_level_definitions(e.path, *content, limits.definitions_per_file)) {
      const std::string line = "  " + d + "\n";
      if (used + line.size() + 64 > limits.total_bytes) {
        used = limits.total_bytes;  // full: no more definitions, anywhere
        break;
      }
      used += line.size();
      map += line;
    }
  }
  if (listed < files.size()) {
    map += "... and " + std::to_string(files.size() - listed) + " more files (list_files shows them)\n";
  }
  return map;
}

}  // namespace lazyagent
