// The strict applier (diff_apply.h): git apply.c's apply_one_fragment and
// find_pos without whitespace options, on an image of lines.
#include "contract/diff_apply.h"

#include <algorithm>

namespace lazyagent {

namespace {

struct ImageLine {
  std::string text;  // with its '\n', if it has one
  bool patched = false;
};

std::vector<ImageLine> image_of(std::string_view content) {
  std::vector<ImageLine> out;
  std::size_t pos = 0;
  while (pos < content.size()) {
    const std::size_t nl = content.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? content.size() : nl + 1;
    out.push_back({std::string(content.substr(pos, end - pos)), false});
    pos = end;
  }
  return out;
}

std::string with_newline(const DiffLine& l) { return l.newline ? l.text + "\n" : l.text; }

struct HunkSides {
  std::vector<std::string> pre, post;
  std::size_t leading = 0, trailing = 0;  // context lines before the first / after the last change
};

HunkSides sides_of(const DiffHunk& h) {
  HunkSides s;
  for (const auto& l : h.lines) {
    if (l.op != '+') s.pre.push_back(with_newline(l));
    if (l.op != '-') s.post.push_back(with_newline(l));
  }
  while (s.leading < h.lines.size() && h.lines[s.leading].op == ' ') ++s.leading;
  while (s.trailing < h.lines.size() - s.leading && h.lines[h.lines.size() - 1 - s.trailing].op == ' ') ++s.trailing;
  return s;
}

bool matches_at(const std::vector<ImageLine>& img, const std::vector<std::string>& pre, std::size_t at,
                bool match_beginning, bool match_end) {
  if (pre.size() > img.size() - std::min(at, img.size()) || at > img.size()) return false;
  if (match_beginning && at != 0) return false;
  if (match_end && at + pre.size() != img.size()) return false;
  for (std::size_t i = 0; i < pre.size(); ++i) {
    if (img[at + i].patched || img[at + i].text != pre[i]) return false;
  }
  return true;
}

// git's find_pos: from `line`, then line+1, line-1, line+2, ... Returns the
// 0-based position or npos.
std::size_t find_position(const std::vector<ImageLine>& img, const std::vector<std::string>& pre, std::size_t line,
                          bool match_beginning, bool match_end) {
  if (match_beginning) line = 0;
  else if (match_end) line = img.size() >= pre.size() ? img.size() - pre.size() : 0;
  line = std::min(line, img.size());
  std::size_t back = line, fwd = line, current = line;
  for (std::size_t i = 0;; ++i) {
    if (matches_at(img, pre, current, match_beginning, match_end)) return current;
    for (;;) {
      if (back == 0 && fwd == img.size()) return std::string::npos;
      if (i & 1) {
        if (back == 0) {
          ++i;
          continue;
        }
        current = --back;
      } else {
        if (fwd == img.size()) {
          ++i;
          continue;
        }
        current = ++fwd;
      }
      break;
    }
  }
}

std::string quoted_line(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '\n') t.pop_back();
  return "'" + display_path(t.substr(0, 120)) + (t.size() > 120 ? "...'" : "'");
}

// Why a hunk does not apply at its stated line: the first line that differs.
std::string first_difference(const std::vector<ImageLine>& img, const std::vector<std::string>& pre, std::size_t at) {
  for (std::size_t i = 0; i < pre.size(); ++i) {
    if (at + i >= img.size()) return "; the file ends at line " + std::to_string(img.size()) + " before the hunk's lines do";
    if (img[at + i].text != pre[i]) {
      std::string why = "; at line " + std::to_string(at + i + 1) + " the file has " + quoted_line(img[at + i].text) +
                        ", the hunk expects " + quoted_line(pre[i]);
      const std::string& a = img[at + i].text;
      const std::string& b = pre[i];
      const bool a_crlf = a.size() >= 2 && a.compare(a.size() - 2, 2, "\r\n") == 0;
      const bool b_crlf = b.size() >= 2 && b.compare(b.size() - 2, 2, "\r\n") == 0;
      if (a_crlf != b_crlf) why += a_crlf ? " (the file's lines end in CRLF, the diff's do not)" : " (the diff's lines end in CRLF, the file's do not)";
      else if ((a.empty() || a.back() != '\n') != (b.empty() || b.back() != '\n'))
        why += " (they differ in the final newline)";
      return why;
    }
    if (img[at + i].patched) return "; line " + std::to_string(at + i + 1) + " was already changed by an earlier hunk";
  }
  return "";
}

// The fuzz `patch` would use: the outer context lines ignored, one or two
// on each side. Returns the fuzz factor (1, 2) that would find the hunk, or 0.
int fuzz_that_applies(const std::vector<ImageLine>& img, const HunkSides& s, std::size_t line) {
  for (int fuzz = 1; fuzz <= 2; ++fuzz) {
    const std::size_t lead = std::min<std::size_t>(fuzz, s.leading), trail = std::min<std::size_t>(fuzz, s.trailing);
    if (lead == 0 && trail == 0) return 0;
    if (lead + trail >= s.pre.size()) return 0;
    std::vector<std::string> pre(s.pre.begin() + static_cast<long>(lead), s.pre.end() - static_cast<long>(trail));
    if (find_position(img, pre, line + lead, false, false) != std::string::npos) return fuzz;
  }
  return 0;
}

}  // namespace

FileApplyResult apply_file_diff(const FileDiff& file, std::string_view old_content) {
  FileApplyResult r;
  std::vector<ImageLine> img = image_of(old_content);
  auto refuse = [&](const char* code, std::string message) {
    r.findings.push_back(Finding{code, display_path(file.path), std::move(message)});
  };
  const std::string where = " of '" + display_path(file.path) + "'";
  for (std::size_t k = 0; k < file.hunks.size(); ++k) {
    const DiffHunk& h = file.hunks[k];
    const HunkSides s = sides_of(h);
    // A change whose side lacks the newline must be the last line there.
    for (std::size_t i = 0; i < h.lines.size(); ++i) {
      const DiffLine& l = h.lines[i];
      if (l.newline) continue;
      bool later_same_side = false;
      for (std::size_t j = i + 1; j < h.lines.size(); ++j) {
        const char op = h.lines[j].op;
        if (op == ' ' || (op == '+' && l.op != '-') || (op == '-' && l.op != '+')) later_same_side = true;
      }
      if (later_same_side || k + 1 < file.hunks.size()) {
        refuse(diff_reason::kHunkDoesNotApply, describe_hunk(h, k) + where +
                                                   " marks a line \"No newline at end of file\" that is not the last of the file.");
        return r;
      }
    }
    const bool match_beginning = h.old_start <= 1;
    const bool match_end = s.trailing == 0;
    const std::size_t line = h.new_start ? h.new_start - 1 : 0;
    if (s.pre.empty() && !img.empty() && h.old_start != img.size()) {
      // No context at all: git apply would silently put the lines at the
      // end of the file (match_end); the stated line is not evidence enough.
      refuse(diff_reason::kHunkDoesNotApply,
             describe_hunk(h, k) + where + " adds lines without any context line around them; it cannot be placed " +
                 "safely. Write the diff with context lines (diff -u, git diff).");
      return r;
    }
    const std::size_t at = find_position(img, s.pre, line, match_beginning, match_end);
    if (at == std::string::npos) {
      const int fuzz = fuzz_that_applies(img, s, line);
      const std::size_t stated = h.old_start ? h.old_start - 1 : 0;
      std::string anchor;
      if (match_beginning && match_end) anchor = " (it starts at line 1 and has no trailing context, so it must cover the whole file)";
      else if (match_beginning) anchor = " (it starts at line 1, so it must match at the beginning of the file)";
      else if (match_end) anchor = " (it has no trailing context, so it must match at the end of the file)";
      // A hunk with no context at all (`diff -U0`) can be placed nowhere
      // but at an end of the file: say how to make one that can.
      const std::string advice = s.leading == 0 && s.trailing == 0
                                     ? " The hunk has no context lines (as `diff -U0` writes): make the diff with "
                                       "context, with `diff -u` or `git diff`."
                                     : "";
      const std::size_t unanchored =
          match_beginning || match_end ? find_position(img, s.pre, line, false, false) : std::string::npos;
      if (unanchored != std::string::npos) {
        refuse(diff_reason::kHunkDoesNotApply,
               describe_hunk(h, k) + where + " does not apply: its lines are at line " + std::to_string(unanchored + 1) +
                   anchor + "." + advice);
      } else if (fuzz > 0) {
        refuse(diff_reason::kHunkNeedsFuzz,
               describe_hunk(h, k) + where + " applies only with fuzz " + std::to_string(fuzz) + " (its outer " +
                   std::to_string(fuzz) + " context line(s) ignored); strict mode refuses it" +
                   first_difference(img, s.pre, stated) + ".");
      } else {
        refuse(diff_reason::kHunkDoesNotApply,
               describe_hunk(h, k) + where + " does not apply: its " + std::to_string(s.pre.size()) +
                   " old line(s) are not in the file at line " + std::to_string(stated + 1) + " or at any offset" +
                   anchor + first_difference(img, s.pre, stated) + "." + advice);
      }
      return r;
    }
    std::vector<ImageLine> replacement;
    replacement.reserve(s.post.size());
    for (const auto& p : s.post) replacement.push_back({p, true});
    img.erase(img.begin() + static_cast<long>(at), img.begin() + static_cast<long>(at + s.pre.size()));
    img.insert(img.begin() + static_cast<long>(at), replacement.begin(), replacement.end());
    const std::size_t stated_line = line + 1;
    r.placements.push_back({k, stated_line, at + 1, static_cast<long>(at) - static_cast<long>(line)});
  }
  std::size_t size = 0;
  for (const auto& l : img) size += l.text.size();
  r.content.reserve(size);
  for (const auto& l : img) r.content += l.text;
  if (file.op == FileOp::kDelete && !r.content.empty()) {
    refuse(diff_reason::kHunkDoesNotApply, "the diff deletes '" + display_path(file.path) + "' but its hunks leave " +
                                               std::to_string(r.content.size()) + " bytes of it.");
  }
  return r;
}

}  // namespace lazyagent
