"""The command scanner of scripts/check-host-commands.py: what is a host command
and what is not (builtins, functions, containers, look-ups), and how packages
are covered. Run: python3 -m unittest -v check_host_commands_test (in tests/deps)."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "check_host_commands", os.path.join(HERE, "..", "..", "scripts", "check-host-commands.py"))
chc = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(chc)


def commands(script):
    sc = chc.ShellScanner(script, "t.sh")
    sc.scan_list()
    found = [(s.command, s.line) for s in sc.sites]
    for cmd, body, first, quoted in sc.heredoc_bodies:
        if cmd is not None and cmd.literal and cmd.text.startswith("python3"):
            found += [(s.command, s.line) for s in chc.scan_python_text(body, "t.sh", first)]
    return sorted(set(c for c, _ in found) - sc.functions - chc.BUILTINS), sc


class ShellScannerTest(unittest.TestCase):
    def test_simple_commands_pipes_lists_and_lines(self):
        names, sc = commands("a=1 b=2 grep -q x file | sort -u && tar -cf y . || rsync -a x y\ncp a b; mv c d &\n")
        self.assertEqual(names, ["cp", "grep", "mv", "rsync", "sort", "tar"])
        self.assertIn(("rsync", 1), [(s.command, s.line) for s in sc.sites])
        self.assertIn(("mv", 2), [(s.command, s.line) for s in sc.sites])

    def test_builtins_keywords_and_functions_are_not_host_commands(self):
        names, sc = commands(
            "helper() { printf '%s\\n' \"$1\"; }\nfunction other { echo x; }\n"
            "if [ -f x ]; then helper y; elif [[ -n $z ]]; then other; else :; fi\n"
            "while read -r l; do local v=$l; done <f\nfor i in a b c; do test -n \"$i\"; done\n"
            "case \"$1\" in build) helper ;; -h|--help) exit 0 ;; *) return 2 ;; esac\n")
        self.assertEqual(names, [])
        self.assertEqual(sc.functions, {"helper", "other"})

    def test_command_substitutions_everywhere(self):
        names, _ = commands(
            'x="$(date +%s)" y=`uname -r`\n'
            'echo "${X:-$(cd "$(dirname "$0")" && pwd)}"\n'
            'while read -r m; do :; done < <(awk 1 /proc/self/mounts | sort -r)\n'
            'n=$(( 1 + $(wc -l <f) ))\n')
        self.assertEqual(names, ["awk", "date", "dirname", "sort", "uname", "wc"])

    def test_what_runs_elsewhere_or_is_only_looked_up_is_not_scanned(self):
        names, _ = commands(
            "podman run --rm img timeout 10 bash -c 'apt-get update'\n"
            "chroot /r dpkg-reconfigure x\n"
            "command -v ccache >/dev/null && echo yes\n"
            "type rustc; hash go 2>/dev/null\n"
            "command gzip -d f\n")
        self.assertEqual(names, ["chroot", "gzip", "podman"])

    def test_wrappers_are_looked_through(self):
        names, _ = commands(
            "exec {FD}>/run/lock/x\nflock -n \"$FD\"\n"
            "setsid nohup curl -s x &\nenv -u X A=1 B=2 sha256sum f\ntimeout -s KILL 5 sleep 9\n"
            "find . -name '*.o' -exec rsync -pc {} out \\;\nxargs -n 1 -P 2 gzip <list\n"
            "sh -c 'tr a b | cut -c1'\ntrap \"rm -rf '$work'\" EXIT\n"
            "wait_for 30 \"its socket\" curl -f x\n"
            "cmake -S . -B b -DCMAKE_CXX_COMPILER=clang++\n")
        self.assertEqual(names, ["clang++", "cmake", "curl", "cut", "env", "find", "flock", "gzip", "nohup",
                                 "rm", "rsync", "setsid", "sh", "sha256sum", "sleep", "timeout", "tr", "xargs"])

    def test_arrays_redirections_and_here_documents(self):
        names, _ = commands(
            "PACKAGES=(\n  # a comment\n  rsync git\n)\nlocal -a run=(run --rm x)\nARGS+=(--flag)\n"
            "cat <<EOF >out\nliteral $(hostname) text\nEOF\n"
            "cat <<'EOF'\nnot run: $(reboot)\nEOF\n"
            "python3 - \"$1\" <<'PY'\nimport subprocess\nsubprocess.run(['git', 'status'])\nPY\n"
            "grep x 2>&1 >/dev/null <<<\"$var\"\n")
        self.assertEqual(names, ["cat", "git", "grep", "hostname", "python3"])

    def test_expansions_and_repository_paths_are_not_checked(self):
        names, sc = commands('"$bin" run\n$CC -c x.c\nscripts/setup.sh --no-k8s\n"$ROOT/scripts/x.sh"\n/usr/bin/env true\n')
        self.assertEqual(names, ["/usr/bin/env"])
        self.assertEqual(sorted(d.command for d in sc.dynamic), ["$CC", "$ROOT/scripts/x.sh", "$bin", "scripts/setup.sh"])


class CppScanTest(unittest.TestCase):
    def test_spawned_programs_and_the_tests_shell_lines(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write('int x;\nposix_spawnp(&pid_, "tar", &fa, nullptr, argv, environ);\n'
                    'sh("podman ps -a --filter label=" + label);\nsh("runc --root \\"" + dir + "\\" list | grep -c x");\n')
        try:
            got = sorted((s.command, s.line) for s in chc.scan_cpp(f.name, "t.cpp"))
        finally:
            os.unlink(f.name)
        self.assertEqual(got, [("podman", 3), ("runc", 4), ("tar", 2)])


class PackagesTest(unittest.TestCase):
    def test_parse_deps(self):
        self.assertEqual(chc.parse_deps("libc6 (>= 2.34), debconf (>= 0.5) | debconf-2.0, python3:any, x [amd64]"),
                         [["libc6"], ["debconf", "debconf-2.0"], ["python3"], ["x"]])

    def test_closure_follows_depends_pre_depends_and_prefers_chosen_alternatives(self):
        status = {
            "a": {"Depends": "b, c | d", "Pre-Depends": "e"},
            "b": {"Depends": "d | c"},  # c is chosen by a: not d
            "c": {}, "d": {}, "e": {"Depends": "virt"},
            "provider": {"Provides": "virt"},
        }
        seen, unknown = chc.closure(["a"], status)
        self.assertEqual(sorted(seen), ["a", "b", "c", "e", "provider", "virt"])
        self.assertEqual(unknown, [])

    def test_setup_packages_reads_the_array_without_comments(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
            f.write("x=1\nPACKAGES=(\n  # tools\n  git curl  # why\n  rsync\n)\nmissing() { :; }\n")
        try:
            self.assertEqual(chc.setup_packages(f.name), ["git", "curl", "rsync"])
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
