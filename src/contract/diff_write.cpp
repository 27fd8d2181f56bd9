// The diff writer (diff_write.h).
#include "contract/diff_write.h"

#include <algorithm>
#include <cstdio>

namespace lazyagent {

namespace {

std::vector<std::string_view> text_lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t nl = s.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

struct LineEdit {
  char op;         // '=', '-', '+'
  std::size_t a;   // index in old (for '=' and '-')
  std::size_t b;   // index in new (for '=' and '+')
};

// Myers over a[lo_a, hi_a) and b[lo_b, hi_b); appends edits, or returns false
// past kMaxDiffEdits differences. The trace keeps V for k in [-d, d] after
// each d: (kMaxDiffEdits + 1)^2 ints at most.
bool myers(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, std::size_t lo_a,
           std::size_t hi_a, std::size_t lo_b, std::size_t hi_b, std::vector<LineEdit>* out) {
  const long n = static_cast<long>(hi_a - lo_a), m = static_cast<long>(hi_b - lo_b);
  const long max_d = std::min<long>(n + m, static_cast<long>(kMaxDiffEdits));
  const long off = max_d + 1;
  std::vector<int> v(static_cast<std::size_t>(2 * max_d + 3), 0);
  std::vector<std::vector<int>> trace;
  auto eq = [&](long x, long y) { return a[lo_a + static_cast<std::size_t>(x)] == b[lo_b + static_cast<std::size_t>(y)]; };
  long found = -1;
  for (long d = 0; d <= max_d && found < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && eq(x, y)) ++x, ++y;
      v[off + k] = static_cast<int>(x);
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
  }
  if (found < 0) return false;
  std::vector<LineEdit> rev;
  auto emit = [&](char op, long x, long y) {
    rev.push_back({op, lo_a + static_cast<std::size_t>(x), lo_b + static_cast<std::size_t>(y)});
  };
  long x = n, y = m;
  for (long d = found; d > 0; --d) {
    const std::vector<int>& prev = trace[static_cast<std::size_t>(d - 1)];  // k in [-(d-1), d-1]
    auto at = [&](long k) { return static_cast<long>(prev[static_cast<std::size_t>(k + d - 1)]); };
    const long k = x - y;
    const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));  // from k+1: an insertion
    const long pk = down ? k + 1 : k - 1;
    const long px = at(pk), py = px - pk;
    const long mx = down ? px : px + 1, my = down ? py + 1 : py;
    while (x > mx && y > my) {
      --x, --y;
      emit('=', x, y);
    }
    if (down) emit('+', px, py);
    else emit('-', px, py);
    x = px, y = py;
  }
  while (x > 0 && y > 0) {
    --x, --y;
    emit('=', x, y);
  }
  out->insert(out->end(), rev.rbegin(), rev.rend());
  return true;
}

std::vector<LineEdit> edits_of(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  std::vector<LineEdit> out;
  for (std::size_t i = 0; i < head; ++i) out.push_back({'=', i, i});
  const std::size_t ea = a.size() - tail, eb = b.size() - tail;
  if (!myers(a, b, head, ea, head, eb, &out)) {
    for (std::size_t i = head; i < ea; ++i) out.push_back({'-', i, head});
    for (std::size_t j = head; j < eb; ++j) out.push_back({'+', ea, j});
  }
  for (std::size_t i = 0; i < tail; ++i) out.push_back({'=', ea + i, eb + i});
  return out;
}

std::string range(std::size_t start, std::size_t count) {
  // git: "-5" for one line, "-5,0" for none at line 5, "-5,3" otherwise.
  if (count == 1) return std::to_string(start + 1);
  return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

void add_line(std::string& out, char op, std::string_view line) {
  out += op;
  out.append(line);
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

void write_hunks(std::string& out, const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
                 std::size_t context) {
  const std::vector<LineEdit> edits = edits_of(a, b);
  std::size_t i = 0;
  while (i < edits.size()) {
    while (i < edits.size() && edits[i].op == '=') ++i;
    if (i == edits.size()) break;
    // A hunk: from `context` before the first change to `context` after the
    // last change that is followed by at most 2 * context equal lines.
    std::size_t start = i >= context ? i - context : 0;
    std::size_t end = i;
    for (;;) {
      while (end < edits.size() && edits[end].op != '=') ++end;
      std::size_t eq = end;
      while (eq < edits.size() && edits[eq].op == '=') ++eq;
      if (eq < edits.size() && eq - end <= 2 * context) {
        end = eq;
        continue;
      }
      end = std::min(edits.size(), end + context);
      break;
    }
    std::size_t old_count = 0, new_count = 0;
    for (std::size_t k = start; k < end; ++k) {
      old_count += edits[k].op != '+';
      new_count += edits[k].op != '-';
    }
    out += "@@ -" + range(edits[start].a, old_count) + " +" + range(edits[start].b, new_count) + " @@\n";
    for (std::size_t k = start; k < end; ++k) {
      const LineEdit& e = edits[k];
      add_line(out, e.op == '=' ? ' ' : e.op, e.op == '+' ? b[e.b] : a[e.a]);
    }
    i = end;
  }
}

std::string octal(unsigned m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", m);
  return buf;
}

}  // namespace

std::string git_quoted(std::string_view prefix, std::string_view path) {
  bool quote = !path.empty() && path.back() == ' ';
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') quote = true;
  }
  if (!quote) return std::string(prefix) + std::string(path);
  std::string out = "\"" + std::string(prefix);
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string write_unified_diff(const std::vector<TextChange>& changes, std::size_t context) {
  std::string out;
  for (const TextChange& c : changes) {
    const bool mode_change = c.op == FileOp::kModify && c.old_mode != c.new_mode;
    if (c.op == FileOp::kModify && !mode_change && c.old_content == c.new_content) continue;
    out += "diff --git " + git_quoted("a/", c.path) + " " + git_quoted("b/", c.path) + "\n";
    if (c.op == FileOp::kCreate) out += "new file mode " + octal(c.new_mode) + "\n";
    if (c.op == FileOp::kDelete) out += "deleted file mode " + octal(c.old_mode) + "\n";
    if (mode_change) out += "old mode " + octal(c.old_mode) + "\nnew mode " + octal(c.new_mode) + "\n";
    const std::string& before = c.op == FileOp::kCreate ? std::string() : c.old_content;
    const std::string& after = c.op == FileOp::kDelete ? std::string() : c.new_content;
    if (before == after) continue;  // an empty file created or deleted, or a mode change alone
    out += "--- " + (c.op == FileOp::kCreate ? std::string("/dev/null") : git_quoted("a/", c.path)) + "\n";
    out += "+++ " + (c.op == FileOp::kDelete ? std::string("/dev/null") : git_quoted("b/", c.path)) + "\n";
    write_hunks(out, text_lines_of(before), text_lines_of(after), context);
  }
  return out;
}

}  // namespace lazyagent
