#include "policy/live_shell.h"

#include "policy/isolation_probe.h"
#include "policy/sandbox_policy.h"

namespace lazyagent {

namespace {

// Room kept after the tail budget for the end line ("\n" + nonce + " shell " + code + "\n").
constexpr std::size_t kLiveEndRoom = 256;

// The client (see the header). $1: the command's number, $2: its text.
// Only sh, coreutils and sed: what every Debian-based image has.
const char* const kLiveClient = R"sh(D=/tmp/.lazyagent-shell N=$1
[ -d "$TMPDIR" ] || mkdir -p "$TMPDIR" 2>/dev/null
umask 077
{ [ -d $D ] || mkdir $D; } || exit 125
n=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
[ ${#n} -eq 32 ] || exit 125
p=; [ -s $D/pid ] && read -r p <$D/pid
f=kept
if [ -z "$p" ] || [ ! -p $D/in ] || ! kill -0 "$p" 2>/dev/null; then
  rm -f $D/in $D/pid $D/exit $D/busy
  mkfifo $D/in || exit 125
  k=sh; command -v bash >/dev/null 2>&1 && k=bash
  echo $k >$D/kind
  (cd /work || exit 125
   if [ $k = bash ]; then bash --noprofile --norc <>$D/in & else sh <>$D/in & fi
   echo $! >$D/pid.t && mv $D/pid.t $D/pid; wait $!; echo $? >$D/exit) </dev/null >/dev/null 2>&1 &
  i=0; while [ ! -s $D/pid ]; do i=$((i+1)); [ $i -lt 500 ] || exit 125; sleep 0.01; done
  read -r p <$D/pid; f=fresh
fi
read -r k <$D/kind
printf '%s %s %s\n' "$n" $f $k
printf '%s\n' "$2" >$D/cmd-$N || exit 125
if [ $k = sh ] && ! e=$(sh -n $D/cmd-$N 2>&1); then
  rm -f $D/cmd-$N; printf '%s\n\n%s 2\n' "$e" "$n"; exit 0
fi
rm -f $D/view-$N; : >$D/out-$N && mkfifo $D/view-$N || exit 125
tail -c +1 -s 0.05 --pid=$p -f $D/out-$N >$D/view-$N 2>/dev/null </dev/null &
t=$!
read -r l </proc/$t/stat; l=${l##*) }; set -f; set -- $l; set +f
echo "$N ${20} $$" >$D/busy
printf '%s\n' "exec 8>>$D/out-$N; . $D/cmd-$N </dev/null >&8 2>&8 8>&-; __lazyagent_rc=\$?; command rm -f $D/busy $D/cmd-$N; command printf '\\n%s %s\\n' $n \$__lazyagent_rc >&8; exec 8>&-" >$D/in
sed -u -n -f /dev/fd/3 3<<EOF <$D/view-$N
/^$n [0-9][0-9]*\$/{
p
q7
}
p
EOF
r=$?
kill $t 2>/dev/null
rm -f $D/view-$N $D/out-$N
[ $r -eq 7 ] && exit 0
rm -f $D/busy $D/cmd-$N
i=0; while [ ! -s $D/exit ] && [ $i -lt 50 ]; do i=$((i+1)); sleep 0.02; done
c=-; [ -s $D/exit ] && read -r c <$D/exit
kill -KILL $p 2>/dev/null
rm -f $D/pid $D/in
printf '\n%s shell %s\n' "$n" "$c"
)sh";

// Ends command $1 (see the header): the processes started since it began
// but its client's own (the file's follower, sed), then the shell if it is
// still in it, then the client.
const char* const kLiveEnd = R"sh(D=/tmp/.lazyagent-shell N=$1
[ -s $D/busy ] || exit 0
read -r b st c <$D/busy
[ "$b" = "$N" ] || exit 0
read -r l </proc/self/stat; l=${l##*) }; set -f; set -- $l; set +f; me=${20}
p=; [ -s $D/pid ] && read -r p <$D/pid
sweep() {
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    case $q in 1|$$|$c|$p) continue;; esac
    read -r l 2>/dev/null <$d/stat || continue
    l=${l##*) }; set -f; set -- $l; set +f
    [ "$2" = "$c" ] && continue
    [ "${20}" -ge "$st" ] && [ "${20}" -lt "$me" ] && kill -KILL $q 2>/dev/null
  done
}
sweep; sleep 0.1; sweep
i=0; while [ -s $D/busy ] && [ $i -lt 20 ]; do i=$((i+1)); sleep 0.05; done
if [ -s $D/busy ] && [ -n "$p" ]; then read -r b _ <$D/busy; [ "$b" = "$N" ] && kill -KILL $p 2>/dev/null; fi
i=0; while kill -0 $c 2>/dev/null && [ $i -lt 40 ]; do i=$((i+1)); sleep 0.05; done
kill -KILL $c 2>/dev/null
exit 0
)sh";

bool is_live_nonce(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool is_exit_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::vector<std::string_view> space_words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t sp = s.find(' ', i);
    const std::size_t end = sp == std::string_view::npos ? s.size() : sp;
    out.push_back(s.substr(i, end - i));
    if (sp == std::string_view::npos) break;
    i = sp + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> live_keeper_argv(std::int64_t lifetime_seconds) {
  // `wait` reaps orphans as they come and may return on one: the loop ends
  // only with the sleep.
  return {"/bin/sh", "-c", "sleep \"$1\" & p=$!; while kill -0 $p 2>/dev/null; do wait; done", "lazyagent-live",
          std::to_string(lifetime_seconds)};
}

std::vector<std::string> live_command_argv(std::int64_t number, const std::string& command) {
  return {"/bin/sh", "-c", kLiveClient, "lazyagent-exec", std::to_string(number), command};
}

std::vector<std::string> live_end_argv(std::int64_t number) {
  return {"/bin/sh", "-c", kLiveEnd, "lazyagent-end", std::to_string(number)};
}

std::vector<std::string> live_probe_argv(const std::string& egress_targets) {
  static const std::string script = std::string("cd ") + kWorkDir + " || exit 125\n" + isolation_probe_shell();
  return {"/bin/sh", "-c", script, "lazyagent-probe", "", "", "", egress_targets};
}

LiveStream::LiveStream(std::size_t head_bytes, std::size_t tail_bytes, std::function<void(const std::string&)> line)
    : head_bytes_(head_bytes), tail_bytes_(tail_bytes), line_(std::move(line)) {}

void LiveStream::feed(std::string_view bytes) {
  if (!first_done_) {
    const std::size_t nl = bytes.find('\n');
    first_.append(bytes.substr(0, nl));
    if (first_.size() > 128) malformed_ = true;
    if (nl == std::string_view::npos) return;
    first_done_ = true;
    bytes.remove_prefix(nl + 1);
  }
  body(bytes);
}

void LiveStream::body(std::string_view bytes) {
  total_ += bytes.size();
  if (head_.size() < head_bytes_) {
    const std::size_t n = std::min(bytes.size(), head_bytes_ - head_.size());
    head_.append(bytes.substr(0, n));
    lines(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  tail_.append(bytes);
  if (tail_.size() > 2 * (tail_bytes_ + kLiveEndRoom)) tail_.erase(0, tail_.size() - (tail_bytes_ + kLiveEndRoom));
  lines(bytes);
}

// Complete lines go out at once, except an empty one and one that starts
// with the nonce: either may be the end (the end line, and the newline the
// shell puts before it), so they wait for the next line.
void LiveStream::lines(std::string_view bytes) {
  if (!line_) return;
  const std::string nonce = first_.substr(0, 32);
  partial_.append(bytes);
  std::size_t nl = 0;
  while ((nl = partial_.find('\n')) != std::string::npos) {
    std::string l = partial_.substr(0, nl);
    partial_.erase(0, nl + 1);
    const bool may_end = !nonce.empty() && l.rfind(nonce, 0) == 0;
    if (!(may_end && held_.size() == 1 && held_[0].empty())) {  // "" then the end: both wait
      for (const auto& h : held_) line_(h);
      held_.clear();
    }
    if (l.empty() || may_end) {
      held_.push_back(std::move(l));
    } else {
      line_(l);
    }
  }
  while (partial_.size() > 64 * 1024) {  // a line that never ends goes in pieces
    for (const auto& h : held_) line_(h);
    held_.clear();
    line_(partial_.substr(0, 64 * 1024));
    partial_.erase(0, 64 * 1024);
  }
}

LiveOutput LiveStream::finish() {
  LiveOutput out;
  const bool cut = total_ > head_.size() + tail_.size();
  if (tail_.size() > tail_bytes_ + kLiveEndRoom) tail_.erase(0, tail_.size() - (tail_bytes_ + kLiveEndRoom));
  std::string rest = cut ? tail_ : head_ + tail_;
  const auto first = space_words(first_);
  const bool first_ok = first_done_ && !malformed_ && first.size() == 3 && is_live_nonce(first[0]) &&
                        (first[1] == "fresh" || first[1] == "kept") && (first[2] == "bash" || first[2] == "sh");
  if (first_ok) {
    out.fresh_shell = first[1] == "fresh";
    out.shell = std::string(first[2]);
    // The end: "\n" + "<nonce> <code>" (or "<nonce> shell <code|->") + "\n", last.
    if (rest.size() >= 2 && rest.back() == '\n') {
      const std::size_t s = rest.rfind('\n', rest.size() - 2);
      if (s != std::string::npos) {
        const auto w = space_words(std::string_view(rest).substr(s + 1, rest.size() - s - 2));
        if (w.size() == 2 && w[0] == first[0] && is_exit_digits(w[1])) {
          out.ended = true;
          out.exit_code = std::stoi(std::string(w[1]));
        } else if (w.size() == 3 && w[0] == first[0] && w[1] == "shell" && (is_exit_digits(w[2]) || w[2] == "-")) {
          out.ended = out.shell_ended = true;
          out.exit_code = w[2] == "-" ? -1 : std::stoi(std::string(w[2]));
        }
        if (out.ended) rest.erase(s);
      }
    }
  } else if (!malformed_) {
    rest = first_ + (first_done_ ? "\n" : "") + rest;  // not the client's first line: all of it is output
  }
  if (out.ended) {
    held_.clear();  // the end line and the newline before it
  }
  if (line_) {
    for (const auto& h : held_) line_(h);
    if (!partial_.empty() && !out.ended) line_(partial_);
  }
  if (!cut) {
    out.output = std::move(rest);
    return out;
  }
  out.truncated = true;
  if (rest.size() > tail_bytes_) rest.erase(0, rest.size() - tail_bytes_);
  out.output = head_ + "\n" + kOutputCutMarker + ": kept the first " + std::to_string(head_.size()) + " and the last " +
               std::to_string(tail_bytes_) + " bytes]\n" + rest;
  return out;
}

}  // namespace lazyagent
