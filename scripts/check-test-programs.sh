#!/usr/bin/env bash
# Fails when a test starts a program that `make test` does not install, so that the
# suite passes on a fresh Debian machine with only the Swift toolchain, whatever else
# the machine running it happens to have (ImageMagick, nginx...).
#
# Usage: scripts/check-test-programs.sh PACKAGE...
#
# The programs a test may run are those of the Debian packages given (the Makefile
# passes the lists it installs for `make test`, its one list of them), of Debian's
# essential packages (on every Debian system: sh, coreutils, gzip...), the Swift
# toolchain's, and the package's own executables (`imago` and `imago-gallery`, built
# beside the tests).
#
# Every place a test starts a process is found in the test sources (an assignment to
# `executableURL`, `Process.run(...)`, or a C spawn/exec call) and the program it runs
# is worked out: a path literal, a constant holding one, `Tool.url` (the built
# `imago`), `Gallery.url` (the built `imago-gallery`), and through `/usr/bin/env` and `sh -c` the commands they run. A place the
# script cannot work out fails too: name the program with a literal there.
set -u
cd "$(dirname "$0")/.."

packages="$* $(dpkg-query -W -f='${Package} ${Essential}\n' | awk '$2 == "yes" { print $1 }')"
toolchain="$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")"

# Every program of those packages, one per line as "path package": /bin and /usr/bin
# are one directory on current Debian, so paths are kept without the /usr prefix.
allowed="$(mktemp)"
trap 'rm -f "$allowed"' EXIT
for package in $packages; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    echo "check-test-programs: $package is not installed (run make deps first)" >&2
    exit 2
  fi
  dpkg -L "$package" | grep -E '^(/usr)?/s?bin/[^/]+$' | sed -e 's|^/usr/|/|' -e "s|\$| $package|" >> "$allowed"
done

# Symbolic links are left out: they lead to sources already read under Tests/.
sources="$(find Tests Integrations/*/Tests -name '*.swift' -type f | sort)"
# shellcheck disable=SC2086 # one word per path
awk -v allowed="$allowed" -v toolchain="$toolchain" '
function fail(where, message) { printf "%s: %s\n", where, message; failures++ }
# The first string literal in `text`, or "".
function literal(text) {
  if (match(text, /"([^"\\]|\\.)*"/)) return substr(text, RSTART + 1, RLENGTH - 2)
  return ""
}
# What an expression naming an executable stands for: an absolute path, "own:NAME"
# for a product of this repository, or "" when it cannot be told.
function executable(expression, file,    name) {
  gsub(/^[ \t]+|[ \t,)]+$/, "", expression)
  sub(/\.path$/, "", expression)
  if (expression ~ /^Tool\.url$/ || (expression == "url" && tool[file])) return "own:imago"
  if (expression ~ /^Gallery\.url$/) return "own:imago-gallery"
  if (expression ~ /^URL\(fileURLWithPath: *"/) return literal(expression)
  if (match(expression, /^URL\(fileURLWithPath: *[A-Za-z_][A-Za-z0-9_]*/)) {
    name = substr(expression, RSTART, RLENGTH); sub(/^URL\(fileURLWithPath: */, "", name)
    return constant[file, name]
  }
  return ""
}
# The program a bare command name runs, or "" when no allowed package has it.
function lookup(name,    path) {
  for (path in packageOf) { if (path ~ ("/" name "$")) return path }
  return ""
}
function check(where, program,    normal) {
  if (program == "") { fail(where, "cannot tell which program this starts; name it with a path literal"); return }
  if (program ~ /^own:/) { checked++; return }
  if (program !~ /^\//) {
    normal = lookup(program)
    if (normal == "") { fail(where, "runs `" program "`, which no package `make test` installs provides"); return }
    checked++; return
  }
  if (index(program, toolchain "/") == 1) { checked++; return }
  normal = program; sub(/^\/usr\//, "/", normal)
  if (!(normal in packageOf)) { fail(where, "runs " program ", which no package `make test` installs provides"); return }
  checked++
}
# The commands a `sh -c` script runs: the first word of each pipeline stage, after
# `exec` or a keyword (`while`, `do`...); "$0" stands for the argument after the
# script. Shell builtins (kill among them) run nothing.
function shell(where, script, after, file,    stages, n, i, words, w, first) {
  n = split(script, stages, /&&|\|\||[|;]/)
  for (i = 1; i <= n; i++) {
    split(stages[i], words, /[ \t]+/)
    w = 1; while (words[w] == "") w++
    first = words[w]
    # After `exec` or a keyword that opens a command list comes the command.
    while (first ~ /^(exec|while|until|if|then|else|do)$/) first = words[++w]
    gsub(/\\?"/, "", first)
    if (first ~ /^(ulimit|cd|export|set|trap|wait|true|false|echo|test|\[|kill|done|fi)$/) continue
    if (first == "$0") { check(where, executable(after, file)); continue }
    check(where, first)
  }
}
BEGIN {
  while ((getline line < allowed) > 0) { split(line, f, " "); packageOf[f[1]] = f[2] }
}
FNR == 1 { files[++fileCount] = FILENAME }
{ source[FILENAME, FNR] = $0; lines[FILENAME] = FNR }
/^[ \t]*enum Tool[ {]/ { tool[FILENAME] = 1 }
match($0, /(let|var) [A-Za-z_][A-Za-z0-9_]* = "[^"]*"/) {
  declaration = substr($0, RSTART, RLENGTH); split(declaration, parts, / = /)
  name = parts[1]; sub(/^(let|var) /, "", name)
  constant[FILENAME, name] = literal(parts[2])
}
END {
  for (k = 1; k <= fileCount; k++) {
    file = files[k]
    for (n = 1; n <= lines[file]; n++) {
      text = source[file, n]
      if (text ~ /^[ \t]*\/\//) continue
      where = file ":" n
      if (text ~ /(posix_spawnp?|execv[pe]*|execl[pe]*|popen|[^A-Za-z_.]system)\(/) {
        fail(where, "starts a process outside Foundation.Process; use Process with a named program"); continue
      }
      variable = ""; program = ""
      if (match(text, /[A-Za-z_][A-Za-z0-9_]*\.executableURL *= */)) {
        variable = substr(text, RSTART, RLENGTH); sub(/\.executableURL.*/, "", variable)
        program = executable(substr(text, RSTART + RLENGTH), file)
      } else if (match(text, /Process\.run\(/)) {
        rest = substr(text, RSTART + RLENGTH); sub(/, *arguments:.*/, "", rest)
        program = executable(rest, file)
        argumentsLine = text
      } else continue
      spawns++
      # The arguments: on the line that sets them, after this one.
      if (variable != "") {
        argumentsLine = ""
        for (m = n; m <= lines[file] && m < n + 12; m++) {
          if (index(source[file, m], variable ".arguments =")) { argumentsLine = source[file, m]; break }
        }
      }
      if (program ~ /^\/(usr\/)?bin\/env$/) {
        check(where, program)
        args = argumentsLine; sub(/.*arguments[ =:]*\[/, "", args)
        check(where, literal(args))
      } else if (program ~ /^\/(usr\/)?bin\/(sh|bash|dash)$/) {
        check(where, program)
        args = argumentsLine; sub(/.*arguments[ =:]*\[ *"-c", */, "", args)
        script = literal(args)
        if (script == "") { fail(where, "a shell without a literal -c script"); continue }
        after = substr(args, length(script) + 3); sub(/^[ ,]*/, "", after); sub(/[],].*/, "", after)
        shell(where, script, after, file)
      } else {
        check(where, program)
      }
    }
  }
  if (failures > 0) {
    printf "==> %d program(s) started by tests are not installed by make test\n", failures
    exit 1
  }
  printf "==> The tests start processes at %d places, all programs make test installs (%d checked)\n", spawns, checked
}
' $sources
