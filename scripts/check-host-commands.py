#!/usr/bin/env python3
"""Every program the set-up, build and test scripts run must be installed by them.

Lists the external commands that scripts/*.sh, scripts/*.py, .ci/run, the
C++ sources (what the binary spawns, what the tests run through sh("...")), the
CMake build (build.ninja and CTestTestfile.cmake of a configured build
directory) and Kubernetes' own build (scripts/k8s-build-commands.txt: what
`make` in Debian's kubernetes source tree runs, established by tracing it)
invoke, maps each to the Debian package that ships it (`dpkg -S` on the real
path of the command), and fails unless that package is

  - Essential (dpkg's Essential: yes), or a dependency of an Essential one,
  - in the set-up's install lists (scripts/setup.sh PACKAGES, any literal
    `apt-get install NAME` in scripts/, and `# lazyagent-installs: NAME`
    annotations for packages a script installs from a downloaded .deb), or
  - a transitive Depends/Pre-Depends of one of those (for `a | b`, the
    alternative already in the set, else the first one, as apt would choose).

Every offender is named with its package and each place that calls it.

What is not a host command, and how it is told apart:
  - shell builtins and keywords; functions defined in the scanned scripts;
  - commands whose name is an expansion ("$bin", "$C_BIN/kubectl": programs
    from a cache or the build, not the host) and repository paths
    (scripts/setup.sh, ./hack/x.sh): reported with --verbose, never checked;
  - what runs inside a container or a chroot: the arguments of `podman`,
    `chroot`, `ctr`, `kubectl` are not scanned (the image owns them);
  - `command -v X`, `type X`, `hash X` look a command up; they do not run it.
Wrappers that run their arguments are looked through: exec, nohup, setsid,
env, nice, stdbuf, timeout, flock, xargs, time, `find -exec`, `sh -c`/`bash -c`
with a literal script, trap handlers, the scripts' own wait_for (2 arguments
first); -DCMAKE_*_COMPILER=X names a compiler the build will run.

Usage: scripts/check-host-commands.py [--build-dir DIR] [--setup-script FILE]
                                      [--list] [--verbose] [--json]
Exit status: 0 all covered, 1 offenders, 2 usage or environment error.
"""

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

BUILTINS = set("""
. : [ [[ ]] alias bg bind break builtin caller cd command compgen complete compopt continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history
jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set
shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait
""".split())
KEYWORDS = set("if then else elif fi case esac for select while until do done in function time ! { }".split())
# The scripts' own functions that run their remaining arguments: name -> arguments to skip first.
RUNS_ITS_ARGS = {"wait_for": 2}
# Commands whose arguments run somewhere else (a container, a chroot, a cluster).
ELSEWHERE = {"podman", "chroot", "ctr", "kubectl", "docker", "nsenter", "unshare", "ip"}
# Wrappers: options that take a value, and how many plain arguments precede the command.
WRAPPERS = {
    "exec": ({"-a"}, 0), "nohup": (set(), 0), "setsid": (set(), 0), "nice": ({"-n"}, 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0), "timeout": ({"-k", "-s", "--kill-after", "--signal"}, 1),
    "flock": ({"-w", "-E", "--timeout", "--conflict-exit-code"}, 1), "time": ({"-f", "-o"}, 0),
    "xargs": ({"-I", "-i", "-n", "-P", "-d", "-a", "-L", "-l", "-s", "-E", "-e"}, 0),
    "env": ({"-u", "-C", "-S", "--unset", "--chdir"}, 0), "sudo": ({"-u", "-g", "-C"}, 0),
    "builtin": (set(), 0),
}


class Site:
    """One place a command is called: a file (relative to the root) and a line."""

    def __init__(self, command, where, line, note=""):
        self.command, self.where, self.line, self.note = command, where, line, note

    def __str__(self):
        return f"{self.where}:{self.line}" + (f" ({self.note})" if self.note else "")


# ---- shell -----------------------------------------------------------------------------

class Word:
    def __init__(self, text, line, literal, quoted=False):
        self.text, self.line, self.literal = text, line, literal  # literal: no expansion in it
        self.quoted = quoted  # some of it was quoted or escaped (a here-document delimiter then expands nothing)


class ShellScanner:
    """A lexer for the shell the scripts are written in, enough to find command words.

    Command substitutions ($(...), `...`, <(...), >(...)) are scanned as command
    lists of their own wherever they appear (words, double quotes, unquoted
    here-documents); arithmetic $((...)) and ${...} are skipped over.
    """

    def __init__(self, text, where, first_line=1):
        self.s, self.where, self.i, self.line = text, where, 0, first_line
        self.sites, self.dynamic, self.functions = [], [], set()
        self.pending_heredocs = []  # [(delimiter, quoted, strip_tabs, command word)]
        self.heredoc_bodies = []    # [(command word, body, first line)]

    # -- character level
    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def advance(self, n=1):
        for _ in range(n):
            if self.i < len(self.s) and self.s[self.i] == "\n":
                self.line += 1
            self.i += 1

    def skip_balanced_subst(self):
        """At '$(' (already consumed): scan the inner command list to its ')'."""
        inner = ShellScanner(self.s, self.where, self.line)
        inner.i = self.i
        inner.scan_list(closing=")")
        self.absorb(inner)
        self.i, self.line = inner.i, inner.line
        if self.peek() == ")":
            self.advance()

    def absorb(self, other):
        self.sites += other.sites
        self.dynamic += other.dynamic
        self.functions |= other.functions
        self.heredoc_bodies += other.heredoc_bodies

    def skip_command_subst(self):
        """At '$(' (not '$(('): skip the substitution and say so."""
        if self.peek() == "$" and self.peek(1) == "(" and self.peek(2) != "(":
            self.advance(2)
            self.skip_balanced_subst()
            return True
        return False

    def skip_arith(self):
        depth = 2  # after '$((': until the matching '))'
        while self.i < len(self.s) and depth > 0:
            c = self.peek()
            if self.skip_command_subst():
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            self.advance()

    def skip_brace_param(self):
        depth = 1  # after '${'
        while self.i < len(self.s) and depth > 0:
            c = self.peek()
            if c == "\\":
                self.advance(2)
                continue
            if c == "'":
                self.read_single_quoted()
                continue
            if c == '"':
                self.read_double_quoted()
                continue
            if self.skip_command_subst():
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            self.advance()

    def read_single_quoted(self):
        self.advance()  # the opening quote
        start = self.i
        while self.i < len(self.s) and self.peek() != "'":
            self.advance()
        text = self.s[start:self.i]
        self.advance()
        return text

    def read_double_quoted(self):
        """Returns (text, literal)."""
        self.advance()
        out, literal = [], True
        while self.i < len(self.s) and self.peek() != '"':
            c = self.peek()
            if c == "\\":
                out.append(self.peek(1))
                self.advance(2)
            elif c == "$":
                literal = False
                self.read_dollar(out)
            elif c == "`":
                literal = False
                self.read_backtick()
            else:
                out.append(c)
                self.advance()
        self.advance()
        return "".join(out), literal

    def read_dollar(self, out):
        """At '$': consume an expansion, scanning any command substitution in it."""
        start = self.i
        nxt = self.peek(1)
        if nxt == "(" and self.peek(2) == "(":
            self.advance(3)
            self.skip_arith()
        elif nxt == "(":
            self.advance(2)
            self.skip_balanced_subst()
        elif nxt == "{":
            self.advance(2)
            self.skip_brace_param()
        elif nxt == "'":
            self.advance()
            self.read_single_quoted()
        else:
            self.advance()
            if self.peek() in "@*#?$!-" or self.peek().isdigit():
                self.advance()
            else:
                while self.i < len(self.s) and (self.peek().isalnum() or self.peek() == "_"):
                    self.advance()
        out.append(self.s[start:self.i])

    def read_backtick(self):
        self.advance()
        start, start_line = self.i, self.line
        while self.i < len(self.s) and self.peek() != "`":
            if self.peek() == "\\":
                self.advance()
            self.advance()
        inner = ShellScanner(self.s[start:self.i], self.where, start_line)
        inner.scan_list()
        self.absorb(inner)
        self.advance()

    # -- token level
    OPERATORS = ["&&", "||", ";;&", ";;", ";&", "|&", "&>>", "&>", ">>", "<<<", "<<-", "<<", "<&", ">&",
                 "<>", ">|", ";", "&", "|", "(", ")", "<", ">", "\n"]

    def next_token(self):
        """('word', Word) | ('op', text, line) | ('redir', text, line) | None at the end."""
        while True:
            c = self.peek()
            if c == "":
                return None
            if c in " \t":
                self.advance()
            elif c == "\\" and self.peek(1) == "\n":
                self.advance(2)
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.advance()
            else:
                break
        line = self.line
        # {VAR}>&- and N>file: a redirection with a descriptor prefix
        m = re.match(r"(\{[A-Za-z_][A-Za-z0-9_]*\}|[0-9]+)(?=[<>])", self.s[self.i:])
        if m:
            self.advance(len(m.group(0)))
        for op in self.OPERATORS:
            if self.s.startswith(op, self.i):
                if op in ("<", ">") and self.peek(1) == "(":  # process substitution
                    self.advance(2)
                    self.skip_balanced_subst()
                    return ("word", Word("$(...)", line, False))
                self.advance(len(op))
                if op == "\n":
                    self.start_heredocs()
                    return ("op", "\n", line)
                if op in (";;", ";;&", ";&", "&&", "||", ";", "&", "|", "|&", "(", ")"):
                    return ("op", op, line)
                return ("redir", op, line)
        return ("word", self.read_word(line))

    def read_word(self, line):
        out, literal, quoted = [], True, False
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n;&|()<>":
                if c in "<>" and self.peek(1) == "(":
                    self.advance(2)
                    self.skip_balanced_subst()
                    literal = False
                    continue
                break
            if c == "\\":
                quoted = True
                out.append(self.peek(1))
                self.advance(2)
            elif c == "'":
                quoted = True
                out.append(self.read_single_quoted())
            elif c == '"':
                quoted = True
                text, lit = self.read_double_quoted()
                out.append(text)
                literal = literal and lit
            elif c == "$":
                literal = False
                self.read_dollar(out)
            elif c == "`":
                literal = False
                self.read_backtick()
            else:
                out.append(c)
                self.advance()
        text = "".join(out)
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\+?=$", text) and self.peek() == "(":
            self.skip_array()  # NAME=( ... ): words, not commands
            literal = False
        return Word(text, line, literal, quoted)

    def skip_array(self):
        self.advance()  # '('
        while True:
            tok = self.next_token()
            if tok is None or (tok[0] == "op" and tok[1] == ")"):
                return

    def start_heredocs(self):
        """At the start of a line after '<<DELIM' redirections: consume their bodies."""
        for delim, quoted, strip, cmd in self.pending_heredocs:
            first = self.line
            body = []
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                text = self.s[self.i:end]
                check = text.lstrip("\t") if strip else text
                self.i = min(end + 1, len(self.s))
                self.line += 1
                if check == delim:
                    break
                body.append(text)
            body_text = "\n".join(body) + "\n"
            self.heredoc_bodies.append((cmd, body_text, first, quoted))
            if not quoted:  # expansions run: scan its command substitutions
                inner = ShellScanner(body_text, self.where, first)
                out = []
                while inner.i < len(inner.s):
                    if inner.peek() == "$":
                        inner.read_dollar(out)
                    elif inner.peek() == "`":
                        inner.read_backtick()
                    else:
                        inner.advance()
                self.absorb(inner)
        self.pending_heredocs = []

    # -- command level
    def scan_list(self, closing=None):
        """Scans commands until `closing` (')' of a substitution) or the end."""
        expect = True
        case_state = []  # stack: "pattern" | "body"
        parens = []      # open subshells
        skip_until = None  # after for/select: skip to 'do'
        current = None     # the current command's Word (for here-doc bodies)
        while True:
            save_i, save_line = self.i, self.line
            tok = self.next_token()
            if tok is None:
                return
            kind = tok[0]
            if kind == "op" and tok[1] == ")" and closing == ")" and not case_state and not parens:
                self.i, self.line = save_i, save_line
                return
            if kind == "redir":
                op = tok[1]
                target = self.next_token()
                if op in ("<<", "<<-") and target and target[0] == "word":
                    self.pending_heredocs.append((target[1].text, target[1].quoted, op == "<<-", current))
                continue
            if kind == "op":
                op = tok[1]
                if case_state and case_state[-1] == "pattern":
                    if op == ")":
                        case_state[-1] = "body"
                        expect = True
                    continue
                if op in (";;", ";;&", ";&") and case_state:
                    case_state[-1] = "pattern"
                    expect = False
                    continue
                if op == "(" and self.peek() == "(":  # (( arithmetic ))
                    self.advance()
                    self.skip_arith()
                    expect = False
                    continue
                if op == "(":
                    parens.append("(")
                    expect = True
                    self._args_hook = None
                    continue
                if op == ")":
                    if parens:
                        parens.pop()
                    expect = False
                    continue
                expect = op in ("\n", ";", "&", "&&", "||", "|", "|&")
                if expect:
                    current = None
                    self._args_hook = None
                continue
            word = tok[1]
            if case_state and case_state[-1] == "pattern":
                if word.text == "esac":
                    case_state.pop()
                    expect = False
                continue
            if skip_until:
                if word.literal and word.text == skip_until:
                    skip_until = None
                    expect = True
                continue
            if word.literal and word.text == "esac" and case_state:
                case_state.pop()
                expect = False
                continue
            if not expect:
                self.argument(word)
                continue
            text = word.text
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", text):
                continue  # an assignment before the command (or alone)
            if not word.text and not word.literal:
                continue
            if word.literal and text in KEYWORDS:
                if text in ("for", "select"):
                    skip_until = "do"
                elif text == "case":
                    # case WORD in
                    self.next_token()
                    self.next_token()
                    case_state.append("pattern")
                    expect = False
                elif text == "function":
                    name = self.next_token()
                    if name and name[0] == "word":
                        self.functions.add(name[1].text)
                elif text in ("fi", "done", "}"):
                    expect = False
                continue
            if word.literal and text == "[[":
                while True:
                    t = self.next_token()
                    if t is None or (t[0] == "word" and t[1].text == "]]"):
                        break
                expect = False
                continue
            # NAME () { ...: a function definition
            rest = self.s[self.i:]
            m = re.match(r"[ \t]*\([ \t]*\)", rest)
            if word.literal and m:
                self.functions.add(text)
                self.advance(len(m.group(0)))
                continue
            current = word
            self.command(word)
            expect = False

    # The words after a command word, handled by the command (see command()).
    def argument(self, word):
        if self._args_hook:
            self._args_hook(word)

    _args_hook = None

    def command(self, word):
        """A word in command position: record it, and look through wrappers."""
        self._args_hook = None
        if not word.literal or "$" in word.text:
            self.dynamic.append(Site(word.text, self.where, word.line, "dynamic"))
            return
        name = word.text
        if name in BUILTINS and name not in ("exec", "command", "time", "builtin", "trap"):
            return
        if "/" in name and not name.startswith("/"):
            self.dynamic.append(Site(name, self.where, word.line, "repository path"))
            return
        if name == "trap":
            state = {"n": 0}

            def trap_args(w):
                state["n"] += 1
                if state["n"] == 1 and w.text:
                    inner = ShellScanner(w.text, self.where, w.line)
                    inner.scan_list()
                    self.absorb(inner)
            self._args_hook = trap_args
            return
        if name in ("command", "type", "hash"):
            def lookup_args(w, state={"checked": name != "command"}):
                if state["checked"]:
                    return
                if w.text.startswith("-"):
                    if w.text in ("-v", "-V"):
                        state["checked"] = True
                    return
                state["checked"] = True
                self.command(w)
            self._args_hook = lookup_args
            return
        if name in WRAPPERS or name in RUNS_ITS_ARGS:
            if name not in RUNS_ITS_ARGS and name not in ("exec", "builtin", "time"):
                self.sites.append(Site(name, self.where, word.line))
            takes_value, plain = WRAPPERS.get(name, (set(), RUNS_ITS_ARGS.get(name, 0)))
            state = {"skip_value": False, "plain": plain, "done": False}

            def wrapped(w):
                if state["done"]:
                    return
                if state["skip_value"]:
                    state["skip_value"] = False
                    return
                if state["plain"] == 0 or name in RUNS_ITS_ARGS:
                    if w.text.startswith("-") and w.literal and name not in RUNS_ITS_ARGS:
                        state["skip_value"] = w.text in takes_value
                        return
                    if name == "env" and w.literal and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w.text):
                        return
                    if state["plain"] > 0:
                        state["plain"] -= 1
                        return
                    state["done"] = True
                    self.command(w)
                    return
                if w.text.startswith("-") and w.literal:
                    state["skip_value"] = w.text in takes_value
                    return
                state["plain"] -= 1
            self._args_hook = wrapped
            return
        self.sites.append(Site(name, self.where, word.line))
        if os.path.basename(name) in ELSEWHERE:
            self._args_hook = None
            return
        if os.path.basename(name) in ("sh", "bash", "dash"):
            state = {"c": False}

            def shell_args(w):
                if w.text == "-c" and w.literal:
                    state["c"] = True
                elif state["c"]:
                    state["c"] = False
                    inner = ShellScanner(w.text, self.where, w.line)
                    inner.scan_list()
                    self.absorb(inner)
            self._args_hook = shell_args
            return
        if os.path.basename(name) == "find":
            state = {"next": False}

            def find_args(w):
                if w.literal and w.text in ("-exec", "-execdir", "-ok", "-okdir"):
                    state["next"] = True
                elif state["next"]:
                    state["next"] = False
                    self.command(w)
                    self._args_hook = find_args
            self._args_hook = find_args
            return

        def compiler_args(w):
            m = re.match(r"^-DCMAKE_(CXX|C)_COMPILER(?:_LAUNCHER)?=(.+)$", w.text)
            if m and w.literal:
                self.sites.append(Site(m.group(2), self.where, w.line, "-DCMAKE_%s_COMPILER" % m.group(1)))
        self._args_hook = compiler_args


def scan_shell(path, rel):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    sc = ShellScanner(text, rel)
    sc.scan_list()
    sites = sc.sites
    # Python in quoted here-documents fed to python3 (`python3 - <<'PY'`).
    for cmd, body, first, quoted in sc.heredoc_bodies:
        if cmd is not None and cmd.literal and os.path.basename(cmd.text).startswith("python3"):
            sites += scan_python_text(body, rel, first)
    return sites, sc.dynamic, sc.functions


# ---- python ----------------------------------------------------------------------------

RUNNERS = {("subprocess", f) for f in ("run", "call", "check_call", "check_output", "Popen")} | \
          {("os", f) for f in ("system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execlp",
                                "spawnv", "spawnvp")}


def scan_python_text(text, rel, first_line=1):
    sites = []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return sites
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        base = node.func.value
        if not isinstance(base, ast.Name) or (base.id, node.func.attr) not in RUNNERS or not node.args:
            continue
        a = node.args[0]
        line = first_line + node.lineno - 1
        if isinstance(a, (ast.List, ast.Tuple)) and a.elts and isinstance(a.elts[0], ast.Constant) \
                and isinstance(a.elts[0].value, str):
            sites.append(Site(a.elts[0].value, rel, line))
        elif isinstance(a, ast.Constant) and isinstance(a.value, str):
            if node.func.attr in ("system", "popen") or any(k.arg == "shell" for k in node.keywords):
                inner = ShellScanner(a.value, rel, line)
                inner.scan_list()
                sites += inner.sites
            else:
                sites.append(Site(a.value, rel, line))
    return sites


# ---- C++ (the binary and the test suite) ------------------------------------------------------

def scan_cpp(path, rel):
    """Commands the binary spawns (posix_spawnp(..., "tar", ...)) and the shell lines
    the tests run through their sh("...") helper (the literal start of the line)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    sites = []
    for m in re.finditer(r'\bposix_spawnp?\([^,]*,\s*"([^"]+)"', text):
        sites.append(Site(m.group(1), rel, text.count("\n", 0, m.start()) + 1))
    for m in re.finditer(r'\bsh\(\s*"((?:[^"\\]|\\.)*)"', text):
        line = text.count("\n", 0, m.start()) + 1
        literal = re.sub(r"\\(.)", lambda e: {"n": "\n", "t": "\t"}.get(e.group(1), e.group(1)), m.group(1))
        inner = ShellScanner(literal, rel, line)
        inner.scan_list()
        sites += inner.sites
    return sites


# ---- CMake build -------------------------------------------------------------------------

def scan_build_dir(build, root):
    sites = []
    for ninja in (os.path.join(build, "build.ninja"), os.path.join(build, "CMakeFiles", "rules.ninja")):
        if not os.path.isfile(ninja):
            continue
        rel = os.path.relpath(ninja, root) if ninja.startswith(root) else ninja
        with open(ninja, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = re.match(r"^\s*(command|COMMAND)\s*=\s*(.*)$", line)
                if not m:
                    continue
                for part in re.split(r"\s*(?:&&|\|\||;)\s*", m.group(2)):
                    words = part.split()
                    if not words or words[0] in (":", "cd") or words[0].startswith("$"):
                        continue
                    exe = words[0]
                    if exe.startswith(root) or exe.startswith(build):
                        continue  # a program of the build itself
                    sites.append(Site(exe, rel, n))
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.isfile(cache):
        with open(cache, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = re.match(r"^(CMAKE_MAKE_PROGRAM|CMAKE_COMMAND|CMAKE_CTEST_COMMAND):[A-Z]+=(.+)$", line.strip())
                if m:
                    sites.append(Site(m.group(2), os.path.relpath(cache, root) if cache.startswith(root) else cache,
                                      n, m.group(1)))
    for dirpath, _, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        path = os.path.join(dirpath, "CTestTestfile.cmake")
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'^\s*add_test\(\s*(?:"[^"]*"|\S+)\s+"([^"]+)"', line)
                if m and not (m.group(1).startswith(root) or m.group(1).startswith(build)):
                    sites.append(Site(m.group(1), os.path.relpath(path, root) if path.startswith(root) else path, n))
    return sites


# ---- Kubernetes' build -----------------------------------------------------------------------

def read_k8s_list(path, root):
    sites = []
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            cmd, _, where = line.partition(" ")
            sites.append(Site(cmd, rel, n, "Kubernetes' build: " + (where.strip() or "?")))
    return sites


# ---- packages ------------------------------------------------------------------------------

def setup_packages(setup_script):
    """The PACKAGES=( ... ) array of scripts/setup.sh (comments dropped)."""
    with open(setup_script, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^PACKAGES=\((.*?)^\)", text, re.S | re.M)
    if not m:
        raise SystemExit(f"check-host-commands: no PACKAGES=( ... ) array in {setup_script}")
    names = []
    for line in m.group(1).splitlines():
        names += line.split("#", 1)[0].split()
    return names


def other_installs(scripts, skip):
    """Literal `apt-get install NAME` arguments and `# lazyagent-installs: NAME` annotations."""
    out = {}
    for path in scripts:
        if os.path.abspath(path) == os.path.abspath(skip):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = re.search(r"#\s*lazyagent-installs:\s*((?:[a-z0-9][a-z0-9+.-]+(?:\s+|$))+)", line)
                if m:
                    for name in m.group(1).split():
                        out[name] = f"{os.path.basename(path)}:{n}"
                # apt-get [options] install [options] NAME...: literal names up to an operator
                m = re.search(r"(?:^|[;&|({]\s*)apt-get\s+((?:-o\s+\S+\s+|-\S+\s+)*)install\s+(.*)$", line)
                if m and not line.lstrip().startswith("#"):
                    words = m.group(2).split()
                    k = 0
                    while k < len(words):
                        w = words[k]
                        if w in (";", "&&", "||", "|", ">&2") or w.startswith((">", "<", ")")):
                            break
                        if w == "-o":
                            k += 2
                            continue
                        if re.match(r"^[a-z0-9][a-z0-9+.-]+$", w):
                            out[w] = f"{os.path.basename(path)}:{n}"
                        k += 1
    return out


def read_dpkg_status(path="/var/lib/dpkg/status"):
    pkgs, cur = {}, {}

    def flush():
        if cur.get("Package") and "install ok installed" in cur.get("Status", ""):
            pkgs[cur["Package"]] = dict(cur)
    with open(path, encoding="utf-8", errors="replace") as f:
        key = None
        for line in f:
            if line == "\n":
                flush()
                cur = {}
                key = None
            elif line[0] in " \t":
                if key:
                    cur[key] += line
            else:
                key, _, val = line.partition(":")
                cur[key] = val.strip()
    flush()
    return pkgs


def parse_deps(text):
    """'a (>= 1) | b, c:any' -> [['a', 'b'], ['c']]"""
    out = []
    for group in (text or "").split(","):
        alts = [re.sub(r"\s*\(.*?\)|\s*\[.*?\]|\s*<.*?>", "", a).strip().split(":")[0] for a in group.split("|")]
        alts = [a for a in alts if a]
        if alts:
            out.append(alts)
    return out


def apt_cache_fields(names):
    """{name: fields} for packages dpkg does not have installed, from one `apt-cache show`."""
    out = {}
    if not names:
        return out
    try:
        r = subprocess.run(["apt-cache", "show", "--no-all-versions"] + sorted(names), capture_output=True, text=True)
    except OSError:
        return out
    fields = {}
    for line in r.stdout.splitlines() + [""]:
        if not line.strip():
            if fields.get("Package") in names:
                out.setdefault(fields["Package"], fields)
            fields = {}
        elif line[0] not in " \t" and ":" in line:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return out


def closure(roots, status):
    """Packages the roots bring, by Depends and Pre-Depends. Of alternatives (a | b)
    the one already chosen, else an installed one (apt keeps it), else the first."""
    provides = {}
    for name, fields in status.items():
        for alts in parse_deps(fields.get("Provides", "")):
            provides.setdefault(alts[0], set()).add(name)
    seen, unknown, wave = set(), [], set(roots)
    while wave:
        fetched = apt_cache_fields({n for n in wave if n not in status and n not in provides})
        chosen = set()
        for name in sorted(wave):
            seen.add(name)
            if name not in status and name in provides:  # a virtual package: its installed providers
                chosen |= provides[name]
                continue
            fields = status[name] if name in status else fetched.get(name)
            if fields is None:
                unknown.append(name)
                continue
            for alts in parse_deps(fields.get("Pre-Depends", "")) + parse_deps(fields.get("Depends", "")):
                pick = next((a for a in alts if a in seen or a in wave or a in chosen), None) or \
                    next((a for a in alts if a in status), None) or alts[0]
                chosen.add(pick)
        wave = chosen - seen
    return seen, unknown


def package_of(paths):
    """{path: package} by one `dpkg -S` call (trying the /usr-merged twin of each path)."""
    candidates = {}
    for p in paths:
        twins = [p]
        if p.startswith("/usr/"):
            twins.append(p[4:])
        else:
            twins.append("/usr" + p)
        candidates[p] = twins
    flat = sorted({t for ts in candidates.values() for t in ts})
    owner = {}
    if flat:
        r = subprocess.run(["dpkg", "-S"] + flat, capture_output=True, text=True)
        for line in r.stdout.splitlines():
            pkgs, _, path = line.partition(": ")
            if path in flat and not pkgs.startswith("diversion by"):
                owner[path] = pkgs.split(",")[0].strip().split(":")[0]
    return {p: next((owner[t] for t in ts if t in owner), None) for p, ts in candidates.items()}


# ---- main ------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=ROOT, help="repository root (default: this script's)")
    ap.add_argument("--build-dir", help="a configured CMake build directory to scan (build.ninja, ctest files)")
    ap.add_argument("--setup-script", help="read PACKAGES from this file instead of scripts/setup.sh")
    ap.add_argument("--list", action="store_true", help="print every command, its package and why it is covered")
    ap.add_argument("--verbose", action="store_true", help="also list the commands not checked (dynamic, repository)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    setup = args.setup_script or os.path.join(root, "scripts", "setup.sh")

    shell_files = sorted(os.path.join(root, "scripts", f) for f in os.listdir(os.path.join(root, "scripts"))
                         if f.endswith(".sh"))
    if os.path.isfile(os.path.join(root, ".ci", "run")):
        shell_files.append(os.path.join(root, ".ci", "run"))
    py_files = sorted(os.path.join(root, "scripts", f) for f in os.listdir(os.path.join(root, "scripts"))
                      if f.endswith(".py"))

    sites, dynamic, functions = [], [], set()
    for path in shell_files:
        s, d, f = scan_shell(path, os.path.relpath(path, root))
        sites += s
        dynamic += d
        functions |= f
    for path in py_files:
        with open(path, encoding="utf-8") as fh:
            sites += scan_python_text(fh.read(), os.path.relpath(path, root))
    cpp_files = []
    for top in ("src", "tests"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            cpp_files += [os.path.join(dirpath, f) for f in files if f.endswith((".cpp", ".h"))]
    for path in sorted(cpp_files):
        sites += scan_cpp(path, os.path.relpath(path, root))
    if args.build_dir:
        sites += scan_build_dir(os.path.abspath(args.build_dir), root)
    k8s_list = os.path.join(root, "scripts", "k8s-build-commands.txt")
    if os.path.isfile(k8s_list):
        sites += read_k8s_list(k8s_list, root)
    sites = [s for s in sites if s.command not in functions and s.command not in BUILTINS
             and s.command not in RUNS_ITS_ARGS]

    installed_by = {p: os.path.relpath(setup, root) + " PACKAGES" for p in setup_packages(setup)}
    for p, where in other_installs(shell_files, setup).items():
        installed_by.setdefault(p, where)
    status = read_dpkg_status()
    essential = sorted(n for n, f in status.items() if f.get("Essential") == "yes")
    from_setup, unknown = closure(sorted(installed_by), status)
    from_essential, _ = closure(essential, status)

    # command -> real path -> package
    by_command = {}
    for s in sites:
        by_command.setdefault(s.command, []).append(s)
    resolved = {}
    for cmd in by_command:
        path = cmd if cmd.startswith("/") else shutil.which(cmd, path=HOST_PATH)
        resolved[cmd] = os.path.realpath(path) if path and os.path.exists(path) else None
    owners = package_of(sorted({p for p in resolved.values() if p}))

    rows, offenders = [], []
    for cmd in sorted(by_command):
        real = resolved[cmd]
        pkg = owners.get(real) if real else None
        if real is None:
            why, ok = "not installed on this machine: no package can be named", False
        elif pkg is None:
            why, ok = f"{real} belongs to no Debian package", False
        elif status.get(pkg, {}).get("Essential") == "yes":
            why, ok = "Essential", True
        elif pkg in installed_by:
            why, ok = f"installed by {installed_by[pkg]}", True
        elif pkg in from_setup:
            why, ok = "a dependency of what the set-up installs", True
        elif pkg in from_essential:
            why, ok = "a dependency of an Essential package", True
        else:
            why, ok = "not Essential, not installed by the set-up, not a dependency of what it installs", False
        row = {"command": cmd, "path": real, "package": pkg, "covered": ok, "why": why,
               "called_at": [str(s) for s in by_command[cmd]]}
        rows.append(row)
        if not ok:
            offenders.append(row)

    if args.json:
        print(json.dumps({"commands": rows, "offenders": offenders, "unknown_packages": unknown,
                          "not_checked": [str(d) + " " + d.command for d in dynamic]}, indent=1))
    else:
        if args.list:
            for r in rows:
                print(f"{'ok ' if r['covered'] else 'BAD'} {r['command']:<28} {r['package'] or '-':<32} {r['why']}")
        if args.verbose:
            for d in dynamic:
                print(f"not checked: {d.command!r} at {d}")
        for r in offenders:
            print(f"check-host-commands: {r['command']} ({'package ' + r['package'] if r['package'] else r['path'] or 'not found'}): "
                  f"{r['why']}; add it to PACKAGES in scripts/setup.sh. Called at:", file=sys.stderr)
            for at in r["called_at"]:
                print(f"    {at}", file=sys.stderr)
        if unknown:
            print(f"check-host-commands: note: unknown to dpkg and apt-cache: {' '.join(unknown)}", file=sys.stderr)
        print(f"check-host-commands: {len(rows)} commands from {len(shell_files)} shell scripts, {len(py_files)} "
              f"Python scripts, {len(cpp_files)} C++ files{', the CMake build' if args.build_dir else ''} and "
              f"Kubernetes' build; "
              f"{len(installed_by)} packages installed by the set-up ({len(from_setup)} with dependencies); "
              f"{len(offenders)} not covered", file=sys.stderr)
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
