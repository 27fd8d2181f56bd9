// The unified diff reader (unified_diff.h): a line-based state machine.
// Names in findings are shown the way the patch contract shows paths
// (escaped, bounded), so no raw control byte reaches a message.
#include "contract/unified_diff.h"

#include <algorithm>


namespace lazyagent {

namespace {

constexpr std::size_t kMaxHunkNumber = 1000000000;  // line numbers and counts past this are malformed

using Lines = std::vector<std::string_view>;

bool starts(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Header lines are compared without a trailing '\r' (a diff saved with CRLF
// line ends); hunk lines keep it, since a CRLF file's lines end in '\r'.
std::string_view header(std::string_view s) {
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

std::string shown_name(std::string_view s) { return "'" + display_path(s) + "'"; }

Lines split_diff_lines(std::string_view text, bool* last_has_newline) {
  Lines out;
  std::size_t pos = 0;
  *last_has_newline = true;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      out.push_back(text.substr(pos));
      *last_has_newline = false;
      break;
    }
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

// A C-quoted name as git writes it: "a/with \"quote\"\t". Returns false when
// the quoting is broken. `rest` gets what follows the closing quote.
bool unquote(std::string_view s, std::string* out, std::string_view* rest) {
  out->clear();
  for (std::size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      *rest = s.substr(i + 1);
      return true;
    }
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++i >= s.size()) return false;
    const char e = s[i];
    switch (e) {
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 't': out->push_back('\t'); break;
      case 'n': out->push_back('\n'); break;
      case 'v': out->push_back('\v'); break;
      case 'f': out->push_back('\f'); break;
      case 'r': out->push_back('\r'); break;
      case '"': case '\\': out->push_back(e); break;
      default:
        if (e < '0' || e > '3' || i + 2 >= s.size() || s[i + 1] < '0' || s[i + 1] > '7' || s[i + 2] < '0' ||
            s[i + 2] > '7')
          return false;
        out->push_back(static_cast<char>(((e - '0') << 6) | ((s[i + 1] - '0') << 3) | (s[i + 2] - '0')));
        i += 2;
    }
  }
  return false;
}

struct HeaderName {
  std::string name;
  bool dev_null = false;
  bool ok = true;
};

bool epoch_timestamp(std::string_view ts) {
  while (!ts.empty() && (ts.front() == ' ' || ts.front() == '\t')) ts.remove_prefix(1);
  return starts(ts, "1970-01-01 00:00:00") || starts(ts, "1969-12-31 ");
}

// The name on a ---/+++ line (after the 4-byte prefix).
HeaderName header_name(std::string_view s) {
  HeaderName h;
  std::string_view rest;
  if (!s.empty() && s.front() == '"') {
    h.ok = unquote(s, &h.name, &rest);
  } else {
    const std::size_t tab = s.find('\t');
    std::string_view name = s.substr(0, tab);
    rest = tab == std::string_view::npos ? std::string_view() : s.substr(tab);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    h.name = std::string(name);
  }
  h.dev_null = h.name == "/dev/null" || (!rest.empty() && epoch_timestamp(rest));
  return h;
}

std::size_t component_count(std::string_view p) { return static_cast<std::size_t>(std::count(p.begin(), p.end(), '/')) + 1; }
std::string_view drop_first(std::string_view p) {
  const std::size_t slash = p.find('/');
  return slash == std::string_view::npos ? std::string_view() : p.substr(slash + 1);
}

bool parse_number(std::string_view s, std::size_t& pos, std::size_t* out) {
  const std::size_t start = pos;
  std::size_t v = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    v = v * 10 + static_cast<std::size_t>(s[pos] - '0');
    if (v > kMaxHunkNumber) return false;
    ++pos;
  }
  *out = v;
  return pos > start;
}

// "@@ -A[,B] +C[,D] @@..." -> true and the numbers.
bool parse_hunk_header(std::string_view s, DiffHunk* h) {
  std::size_t pos = 4;  // after "@@ -"
  if (!starts(s, "@@ -") || !parse_number(s, pos, &h->old_start)) return false;
  h->old_count = 1;
  if (pos < s.size() && s[pos] == ',' && !parse_number(s, ++pos, &h->old_count)) return false;
  if (s.substr(pos, 2) != " +") return false;
  pos += 2;
  if (!parse_number(s, pos, &h->new_start)) return false;
  h->new_count = 1;
  if (pos < s.size() && s[pos] == ',' && !parse_number(s, ++pos, &h->new_count)) return false;
  return s.substr(pos, 3) == " @@" || s.substr(pos) == " @@";
}

bool parse_mode(std::string_view s, unsigned* out) {
  s = header(s);
  if (s.size() != 6) return false;
  unsigned v = 0;
  for (const char c : s) {
    if (c < '0' || c > '7') return false;
    v = v * 8 + static_cast<unsigned>(c - '0');
  }
  *out = v;
  return true;
}

class DiffReader {
 public:
  explicit DiffReader(std::string_view text) { lines_ = split_diff_lines(text, &last_newline_); }

  DiffReadResult read() {
    bool blank = true;
    for (auto l : lines_) blank = blank && l.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
    if (blank) {
      fail(diff_reason::kEmptyDiff, "", "the diff is empty: there is nothing to apply.");
      return std::move(out_);
    }
    while (i_ < lines_.size()) {
      const std::string_view l = header(lines_[i_]);
      if (starts(l, "diff --git ")) {
        git_section();
      } else if (plain_header_at(i_)) {
        plain_section();
      } else if (starts(l, "@@ -")) {
        fail(diff_reason::kMalformedDiff, "", "line " + std::to_string(i_ + 1) +
                                                  ": a hunk header outside a file section (no ---/+++ lines before it).");
        ++i_;
        while (i_ < lines_.size() && hunk_line(lines_[i_])) ++i_;
      } else if (starts(l, "Binary files ") || l == "GIT binary patch") {
        FileDiff f;
        f.binary = true;
        f.line = i_ + 1;
        out_.diff.files.push_back(std::move(f));
        ++i_;
      } else {
        ++i_;  // text around the diff
      }
    }
    if (out_.diff.files.empty() && out_.findings.empty()) {
      fail(diff_reason::kEmptyDiff, "",
           "no file changes found: the text has no `diff --git` line and no `---`/`+++` header pair.");
    }
    return std::move(out_);
  }

 private:
  void fail(const char* code, std::string_view path, std::string message) {
    out_.findings.push_back(
        Finding{code, path.empty() ? std::string() : display_path(path), std::move(message)});
  }
  std::string at(std::size_t i) const { return "line " + std::to_string(i + 1); }

  bool plain_header_at(std::size_t i) const {
    return i + 1 < lines_.size() && starts(header(lines_[i]), "--- ") && starts(header(lines_[i + 1]), "+++ ");
  }
  static bool hunk_line(std::string_view l) { return !l.empty() && (l[0] == ' ' || l[0] == '-' || l[0] == '+' || l[0] == '\\'); }
  // A line that ends a hunk read by its lines: a new hunk, section or header pair.
  bool boundary(std::size_t i) const {
    const std::string_view l = header(lines_[i]);
    return starts(l, "@@ ") || starts(l, "diff ") || plain_header_at(i) ||
           (l == "-- " && (i + 1 >= lines_.size() || !hunk_line(lines_[i + 1])));  // a mail signature
  }

  // ---/+++ at i_ (both present): fills old/new names; false when malformed.
  bool read_header_pair(FileDiff* f, HeaderName* o, HeaderName* n) {
    *o = header_name(header(lines_[i_]).substr(4));
    *n = header_name(header(lines_[i_ + 1]).substr(4));
    if (!o->ok || !n->ok) {
      fail(diff_reason::kMalformedDiff, "", at(i_) + ": a file name's quoting is broken.");
      i_ += 2;
      return false;
    }
    if (o->dev_null && n->dev_null) {
      fail(diff_reason::kMalformedDiff, "", at(i_) + ": both --- and +++ name /dev/null.");
      i_ += 2;
      return false;
    }
    f->op = o->dev_null ? FileOp::kCreate : n->dev_null ? FileOp::kDelete : FileOp::kModify;
    i_ += 2;
    return true;
  }

  void git_section() {
    FileDiff f;
    f.git = true;
    f.line = i_ + 1;
    std::string git_old, git_new;
    git_header_names(header(lines_[i_]).substr(11), &git_old, &git_new);
    ++i_;
    for (; i_ < lines_.size(); ++i_) {
      const std::string_view l = header(lines_[i_]);
      auto after = [&](std::string_view p) { return l.substr(p.size()); };
      auto name_after = [&](std::string_view p, std::string* out) {
        const HeaderName h = header_name(after(p));
        if (!h.ok) fail(diff_reason::kMalformedDiff, "", at(i_) + ": a file name's quoting is broken.");
        *out = h.name;
      };
      if (starts(l, "old mode ")) {
        if (!parse_mode(after("old mode "), &f.old_mode)) bad_mode_line();
      } else if (starts(l, "new mode ")) {
        if (!parse_mode(after("new mode "), &f.new_mode)) bad_mode_line();
      } else if (starts(l, "new file mode ")) {
        f.op = FileOp::kCreate;
        if (!parse_mode(after("new file mode "), &f.new_mode)) bad_mode_line();
      } else if (starts(l, "deleted file mode ")) {
        f.op = FileOp::kDelete;
        if (!parse_mode(after("deleted file mode "), &f.old_mode)) bad_mode_line();
      } else if (starts(l, "index ")) {
        const std::size_t sp = l.rfind(' ');
        unsigned m = 0;
        if (sp > 6 && parse_mode(l.substr(sp + 1), &m) && f.old_mode == 0 && f.new_mode == 0) {
          f.old_mode = f.new_mode = m;
        }
      } else if (starts(l, "similarity index ") || starts(l, "dissimilarity index ")) {
      } else if (starts(l, "rename from ") || starts(l, "rename old ")) {
        f.rename = true;
        name_after(starts(l, "rename from ") ? "rename from " : "rename old ", &git_old);
      } else if (starts(l, "rename to ") || starts(l, "rename new ")) {
        f.rename = true;
        name_after(starts(l, "rename to ") ? "rename to " : "rename new ", &git_new);
      } else if (starts(l, "copy from ")) {
        f.copy = true;
        name_after("copy from ", &git_old);
      } else if (starts(l, "copy to ")) {
        f.copy = true;
        name_after("copy to ", &git_new);
      } else {
        break;
      }
    }
    // Rename/copy lines name the files without a prefix; the `diff --git`
    // line's names lost theirs in git_header_names.
    f.old_path = f.op == FileOp::kCreate ? "" : git_old;
    f.new_path = f.op == FileOp::kDelete ? "" : git_new;
    if (i_ < lines_.size() && plain_header_at(i_)) {
      HeaderName o, n;
      const std::size_t pair_line = i_;
      if (!read_header_pair(&f, &o, &n)) return skip_hunks();
      auto strip = [&](const HeaderName& h, std::string* out) {
        if (h.dev_null) {
          out->clear();
          return true;
        }
        if (component_count(h.name) < 2) return false;
        *out = std::string(drop_first(h.name));
        return true;
      };
      if (!strip(o, &f.old_path) || !strip(n, &f.new_path)) {
        fail(diff_reason::kMalformedDiff, "", at(pair_line) +
                                                  ": a git diff's --- and +++ names need a prefix directory (a/, b/): " +
                                                  shown_name(o.name) + ", " + shown_name(n.name) + ".");
        return skip_hunks();
      }
      if (!f.rename && !f.copy && !f.old_path.empty() && !f.new_path.empty() && f.old_path != f.new_path) {
        f.rename = true;  // names that differ without rename lines: a rename all the same
      }
    }
    if (i_ < lines_.size()) {
      const std::string_view l = header(lines_[i_]);
      if (l == "GIT binary patch" || starts(l, "Binary files ")) {
        f.binary = true;
        for (++i_; i_ < lines_.size() && !starts(header(lines_[i_]), "diff --git "); ++i_) {
        }
      }
    }
    if (f.old_path.empty() && f.new_path.empty()) {
      fail(diff_reason::kMalformedDiff, "", at(f.line - 1) + ": cannot tell the file's name from the `diff --git` line.");
      return skip_hunks();
    }
    f.path = f.new_path.empty() ? f.old_path : f.new_path;
    read_hunks(&f);
    out_.diff.files.push_back(std::move(f));
  }

  void bad_mode_line() {
    fail(diff_reason::kMalformedDiff, "", at(i_) + ": a file mode must be six octal digits.");
  }

  // `diff --git A B`: quoted names, or the split where both halves name the
  // same file once their first component is dropped.
  void git_header_names(std::string_view s, std::string* a, std::string* b) {
    if (!s.empty() && s.front() == '"') {
      std::string_view rest;
      std::string first;
      if (!unquote(s, &first, &rest) || rest.empty() || rest.front() != ' ') return;
      rest.remove_prefix(1);
      HeaderName second = header_name(rest);
      if (!second.ok || component_count(first) < 2 || component_count(second.name) < 2) return;
      *a = std::string(drop_first(first));
      *b = std::string(drop_first(second.name));
      return;
    }
    for (std::size_t sp = s.find(' '); sp != std::string_view::npos; sp = s.find(' ', sp + 1)) {
      const std::string_view x = s.substr(0, sp), y = s.substr(sp + 1);
      if (component_count(x) >= 2 && component_count(y) >= 2 && drop_first(x) == drop_first(y)) {
        *a = *b = std::string(drop_first(x));
        return;
      }
    }
  }

  void plain_section() {
    FileDiff f;
    f.line = i_ + 1;
    HeaderName o, n;
    const std::size_t pair_line = i_;
    if (!read_header_pair(&f, &o, &n)) return skip_hunks();
    // The prefix rule sees both names when both are written (`diff -N`
    // names a missing side and dates it 1970); /dev/null has none.
    std::string_view old_name = o.name == "/dev/null" ? "" : std::string_view(o.name);
    std::string_view new_name = n.name == "/dev/null" ? "" : std::string_view(n.name);
    if (!old_name.empty() && !new_name.empty()) {
      const std::size_t a = old_name.find('/'), b = new_name.find('/');
      if (a != std::string_view::npos && b != std::string_view::npos &&
          old_name.substr(0, a) != new_name.substr(0, b) && drop_first(old_name) == drop_first(new_name)) {
        old_name = drop_first(old_name);
        new_name = drop_first(new_name);
      }
    } else if (!old_name.empty() && starts(old_name, "a/") && old_name.size() > 2) {
      old_name.remove_prefix(2);
    } else if (!new_name.empty() && starts(new_name, "b/") && new_name.size() > 2) {
      new_name.remove_prefix(2);
    }
    if (o.dev_null) old_name = "";
    if (n.dev_null) new_name = "";
    f.old_path = std::string(old_name);
    f.new_path = std::string(new_name);
    if (!old_name.empty() && !new_name.empty() && old_name != new_name && !backup_name(old_name, new_name)) {
      f.rename = true;
    }
    if (f.rename || f.op != FileOp::kModify) {
      f.path = f.new_path.empty() ? f.old_path : f.new_path;
    } else {
      f.path = f.new_path;  // `diff -u x.py.orig x.py` changes x.py
      f.old_path = f.new_path;
    }
    if (i_ >= lines_.size() || !starts(header(lines_[i_]), "@@ ")) {
      fail(diff_reason::kMalformedDiff, f.path, at(pair_line) + ": the --- and +++ lines are not followed by a hunk.");
      return;
    }
    read_hunks(&f);
    out_.diff.files.push_back(std::move(f));
  }

  // x.py.orig, x.py~, x.py.bak: the old side of `diff -u x.py.orig x.py`.
  static bool backup_name(std::string_view old_name, std::string_view new_name) {
    if (old_name.size() <= new_name.size() || old_name.substr(0, new_name.size()) != new_name) return false;
    const std::string_view suffix = old_name.substr(new_name.size());
    return suffix == "~" || suffix == ".orig" || suffix == ".old" || suffix == ".bak";
  }

  void skip_hunks() {
    while (i_ < lines_.size() && (starts(header(lines_[i_]), "@@ ") || hunk_line(lines_[i_])) &&
           !starts(header(lines_[i_]), "diff --git ") && !plain_header_at(i_)) {
      ++i_;
    }
  }

  void read_hunks(FileDiff* f) {
    while (i_ < lines_.size() && starts(header(lines_[i_]), "@@ ")) {
      DiffHunk h;
      h.line = i_ + 1;
      if (!parse_hunk_header(header(lines_[i_]), &h)) {
        fail(diff_reason::kMalformedDiff, f->path,
             at(i_) + ": " + shown_name(header(lines_[i_]).substr(0, 60)) +
                 " is not a hunk header of the form @@ -START,COUNT +START,COUNT @@.");
        ++i_;
        skip_hunks();
        return;
      }
      ++i_;
      if (!read_hunk_body(f, &h)) return;
      f->hunks.push_back(std::move(h));
    }
  }

  // Appends a line; '\' marks the previous one. False on a misplaced marker.
  bool add_line(DiffHunk* h, std::string_view l, std::size_t i, const FileDiff& f) {
    if (l.empty()) {
      h->lines.push_back({' ', "", true});
    } else if (l[0] == '\\') {
      if (h->lines.empty() || !h->lines.back().newline) {
        fail(diff_reason::kMalformedDiff, f.path, at(i) + ": a \"\\ No newline\" marker that follows no line.");
        return false;
      }
      h->lines.back().newline = false;
    } else {
      h->lines.push_back({l[0], std::string(l.substr(1)), true});
    }
    return true;
  }

  // Reads the lines of one hunk: by its counts when the lines agree with
  // them, else by the lines themselves (recounted). False when malformed.
  bool read_hunk_body(FileDiff* f, DiffHunk* h) {
    const std::size_t start = i_;
    std::size_t j = start, o = 0, n = 0;
    bool by_counts = true;
    DiffHunk counted = *h;
    while (by_counts && (o < h->old_count || n < h->new_count)) {
      if (j >= lines_.size()) {
        by_counts = false;
        break;
      }
      const std::string_view l = lines_[j];
      const char c = l.empty() ? ' ' : l[0];
      if (c == ' ') ++o, ++n;
      else if (c == '-') ++o;
      else if (c == '+') ++n;
      else if (c != '\\') {
        by_counts = false;
        break;
      }
      if (o > h->old_count || n > h->new_count) {
        by_counts = false;
        break;
      }
      if (!add_line(&counted, l, j, *f)) return false;
      ++j;
    }
    if (by_counts) {
      while (j < lines_.size() && !lines_[j].empty() && lines_[j][0] == '\\') {
        if (!add_line(&counted, lines_[j], j, *f)) return false;
        ++j;
      }
      // More hunk lines right after: the counts were too small.
      if (j < lines_.size() && !lines_[j].empty() && hunk_line(lines_[j]) && !boundary(j)) by_counts = false;
    }
    if (by_counts) {
      *h = std::move(counted);
      i_ = j;
      return true;
    }
    // By the lines: up to a boundary or a line that is no hunk line; blank
    // lines count as empty context only when more hunk lines follow.
    h->lines.clear();
    for (j = start; j < lines_.size(); ++j) {
      const std::string_view l = lines_[j];
      if (boundary(j)) break;
      if (l.empty() || l == "\r") {
        std::size_t k = j;
        while (k < lines_.size() && (lines_[k].empty() || lines_[k] == "\r")) ++k;
        if (k >= lines_.size() || !hunk_line(lines_[k]) || boundary(k)) break;
        if (l == "\r") h->lines.push_back({' ', "\r", true});
        else h->lines.push_back({' ', "", true});
        continue;
      }
      if (!hunk_line(l)) break;
      if (!add_line(h, l, j, *f)) return false;
    }
    i_ = j;
    std::size_t old_n = 0, new_n = 0;
    for (const auto& x : h->lines) {
      old_n += x.op != '+';
      new_n += x.op != '-';
    }
    if (h->lines.empty()) {
      fail(diff_reason::kMalformedDiff, f->path, "line " + std::to_string(h->line) + ": the hunk has no lines.");
      return false;
    }
    h->recounted = old_n != h->old_count || new_n != h->new_count;
    h->old_count = old_n;
    h->new_count = new_n;
    return true;
  }

  Lines lines_;
  bool last_newline_ = true;
  std::size_t i_ = 0;
  DiffReadResult out_;
};

}  // namespace

DiffReadResult read_unified_diff(std::string_view text) {
  try {
    return DiffReader(text).read();
  } catch (const std::exception& e) {  // std::bad_alloc
    DiffReadResult r;
    r.findings.push_back({diff_reason::kMalformedDiff, "", std::string("the diff could not be read: ") + e.what() + "."});
    return r;
  }
}

DiffStats diff_stats(const UnifiedDiff& diff) {
  DiffStats s;
  s.files = diff.files.size();
  for (const auto& f : diff.files) {
    s.hunks += f.hunks.size();
    for (const auto& h : f.hunks) {
      for (const auto& l : h.lines) {
        if (l.op == '+') {
          ++s.added;
          s.added_bytes += l.text.size() + (l.newline ? 1 : 0);
        } else if (l.op == '-') {
          ++s.removed;
        }
      }
    }
  }
  return s;
}

std::string describe_hunk(const DiffHunk& h, std::size_t index) {
  return "hunk " + std::to_string(index + 1) + " (@@ -" + std::to_string(h.old_start) + "," +
         std::to_string(h.old_count) + " +" + std::to_string(h.new_start) + "," + std::to_string(h.new_count) +
         " @@ at line " + std::to_string(h.line) + " of the diff)";
}

bool looks_like_unified_diff(std::string_view text) {
  bool last_newline = true;
  const Lines lines = split_diff_lines(text, &last_newline);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view l = header(lines[i]);
    if (starts(l, "diff --git ") || starts(l, "@@ -")) return true;
    if (starts(l, "--- ") && i + 1 < lines.size() && starts(header(lines[i + 1]), "+++ ")) return true;
  }
  return false;
}

}  // namespace lazyagent
