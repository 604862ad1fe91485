#!/usr/bin/env bash
# Fails when a folder of the Imago module refers to a type of a folder above it, so
# that the module stays in layers: core types at its root, each folder depending only
# on the root and on the folders below it (docs/ARCHITECTURE.md draws the order).
#
# A type belongs to the folder of the file that declares it at the top level (its
# nested types go with it); a file refers to a type when the type's name appears in
# its code (comments, strings and `canImport` conditions left out), an `extension`
# included. Names are read as text, without the compiler: a local name spelled like
# a type of another folder counts as a reference, so such names are avoided.
#
# Usage: scripts/check-layers.sh   (from anywhere; reads Sources/Imago)
set -eu
cd "$(dirname "$0")/.."
# Bottom first, above the root: the files directly in Sources/Imago (core types) and
# Support (their utilities), one layer below all.
layers="Platform Processing Decoding Encoding Transport Caching Pipeline Loading"
files="$(find Sources/Imago -name '*.swift' -type f | sort)"
# shellcheck disable=SC2086 # one word per path
awk -v layers="$layers" '
function folder(path,    rest) {
  rest = substr(path, length("Sources/Imago/") + 1)
  if (index(rest, "/") == 0) return "(root)"
  return substr(rest, 1, index(rest, "/") - 1)
}
BEGIN {
  n = split(layers, order, " ")
  rank["(root)"] = 0
  rank["Support"] = 0
  for (i = 1; i <= n; i++) rank[order[i]] = i
}
# First pass over every file: the types each folder declares at the top level.
FNR == 1 { pass = (FILENAME in seen) ? 2 : 1; seen[FILENAME] = 1; inComment = 0 }
pass == 1 {
  if (match($0, /^((@[A-Za-z]+(\([^)]*\))?|public|package|internal|private|fileprivate|final|open|nonisolated|indirect) +)*(struct|class|enum|protocol|actor|typealias) +[A-Z][A-Za-z0-9_]*/)) {
    declared = substr($0, RSTART, RLENGTH)
    sub(/.* /, "", declared)
    owner[declared] = folder(FILENAME)
    where[declared] = FILENAME
  }
  next
}
# Second pass: references to types of folders above the file'"'"'s own.
{
  line = $0
  if (inComment) { if (index(line, "*/") == 0) next; line = substr(line, index(line, "*/") + 2); inComment = 0 }
  gsub(/\/\*.*\*\//, "", line)
  if (index(line, "/*")) { line = substr(line, 1, index(line, "/*") - 1); inComment = 1 }
  sub(/\/\/.*/, "", line)
  gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
  gsub(/canImport\([A-Za-z]+\)/, "", line)
  if (line ~ /^[ \t]*import /) next
  mine = folder(FILENAME)
  while (match(line, /[A-Z][A-Za-z0-9_]*/)) {
    word = substr(line, RSTART, RLENGTH)
    line = substr(line, RSTART + RLENGTH)
    if (!(word in owner)) continue
    theirs = owner[word]
    if (!(mine in rank) || !(theirs in rank)) {
      key = mine "/" theirs
      if (!(key in unknown)) { printf "check-layers: folder %s or %s is in no layer; add it to scripts/check-layers.sh\n", mine, theirs; unknown[key] = 1; failures++ }
      continue
    }
    if (rank[theirs] > rank[mine] && !((FILENAME, word) in told)) {
      printf "%s:%d: %s refers to %s (%s, declared in %s), a folder above it\n", FILENAME, FNR, mine, word, theirs, where[word]
      told[FILENAME, word] = 1
      failures++
    }
  }
}
END {
  if (failures) { printf "check-layers: %d reference(s) against the layers (bottom first: the root and Support, %s)\n", failures, layers; exit 1 }
  printf "    the folders of Sources/Imago refer only to the root and to folders below them (bottom first: the root and Support, %s)\n", layers
}
' $files $files
