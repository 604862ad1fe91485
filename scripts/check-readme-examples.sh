#!/usr/bin/env bash
# Compiles every Swift example in README.md the way a newcomer would use it: in a new
# package made from the README's own Package.swift, its dependency on Imago pointed
# at this checkout, each example the main.swift of an executable target. The first
# example after the manifest is the manifest's own target, as written; the others
# are targets added to it.
#
# Usage: scripts/check-readme-examples.sh
#
# Each example depends on the products it imports (Imago, ImagoUI). A block whose
# first line starts with "// Apple platforms only" is compiled on Apple platforms
# only (and not at all when it needs UIKit, which macOS lacks); a block that imports
# ImagoGTK is compiled against the GTK view's package (Integrations/GTK, which needs
# libgtk-4-dev) and skipped on Apple platforms. The package is built in
# .build/readme-examples with warnings as errors; compiler messages point at
# README.md's own lines.
set -eu
cd "$(dirname "$0")/.."
root="$(pwd)"
swift="${SWIFT:-swift}"
out=.build/readme-examples
platform="$(uname -s)"

rm -rf "$out/blocks" "$out/Sources"
mkdir -p "$out/blocks" "$out/Sources"
# One file per block, named by the README line its code starts on.
awk -v dir="$out/blocks" '
  /^```swift[ \t]*$/ { file = sprintf("%s/%05d.swift", dir, NR + 1); next }
  /^```/ && file != "" { close(file); file = ""; next }
  file != "" { print > file }
' README.md

# The libraries the README tells a newcomer to install are those the build needs: every
# package of the Makefile's list is on its apt-get line.
listed="$(grep -m1 '^    sudo apt-get install ' README.md || true)"
[ -n "$listed" ] || { echo "README.md has no 'sudo apt-get install' line" >&2; exit 1; }
for package in $(sed -n 's/^DEBIAN_PACKAGES := //p' Makefile); do
  case " $listed " in
    *" $package "*) ;;
    *) echo "README.md: its apt-get line leaves out $package, which the build needs" >&2; exit 1 ;;
  esac
done

manifest=""
first=""
targets=""
needsGTK=no
compiled=0
skipped=0
for block in "$out"/blocks/*.swift; do
  line=$((10#$(basename "$block" .swift)))
  if grep -q '^import PackageDescription' "$block"; then
    [ -z "$manifest" ] || { echo "README.md:$line: a second Package.swift; the examples are built with the first" >&2; exit 1; }
    manifest="$block"
    continue
  fi
  if head -n 1 "$block" | grep -q '^// Apple platforms only'; then
    if [ "$platform" != Darwin ] || grep -q '^import UIKit' "$block"; then skipped=$((skipped + 1)); continue; fi
  fi
  # The products the block imports: Imago's two, or the GTK package's.
  products=""
  grep -q '^import Imago$' "$block" && products="$products .product(name: \"Imago\", package: \"Imago\"),"
  grep -q '^import ImagoUI$' "$block" && products="$products .product(name: \"ImagoUI\", package: \"Imago\"),"
  if grep -q '^import ImagoGTK' "$block"; then
    if [ "$platform" = Darwin ]; then skipped=$((skipped + 1)); continue; fi
    products="$products .product(name: \"ImagoGTK\", package: \"ImagoGTK\"),"
    needsGTK=yes
  fi
  if [ -z "$manifest" ]; then
    echo "README.md:$line: a Swift example before the Package.swift it would be built with" >&2
    exit 1
  fi
  if [ -z "$first" ]; then
    # The first example is the manifest's own executable target.
    first="$(awk '/\.executableTarget\(/ { found = 1 } found && match($0, /name: "[^"]+"/) { print substr($0, RSTART + 7, RLENGTH - 8); exit }' "$manifest")"
    [ -n "$first" ] || { echo "README.md: the Package.swift has no executable target for the first example" >&2; exit 1; }
    name="$first"
  else
    name="Example$line"
    targets="$targets        .executableTarget(name: \"$name\", dependencies: [${products# }]),
"
  fi
  mkdir -p "$out/Sources/$name"
  { echo "#sourceLocation(file: \"$root/README.md\", line: $line)"; cat "$block"; } > "$out/Sources/$name/main.swift"
  compiled=$((compiled + 1))
done
[ -n "$manifest" ] || { echo "README.md has no Package.swift example" >&2; exit 1; }

# The README's manifest, its dependency on Imago pointed at this checkout.
sed -E "s|\.package\(url: *\"[^\"]*\"[^)]*\)|.package(name: \"Imago\", path: \"$root\")|" "$manifest" > "$out/Package.swift"
grep -q "path: \"$root\"" "$out/Package.swift" || { echo "README.md: the Package.swift has no .package(url: ...) line for Imago" >&2; exit 1; }
{
  echo
  echo "// The other examples of README.md, one target each."
  if [ "$needsGTK" = yes ]; then
    echo "package.dependencies += [.package(name: \"ImagoGTK\", path: \"$root/Integrations/GTK\")]"
  fi
  echo "package.targets += ["
  printf '%s' "$targets"
  echo "]"
} >> "$out/Package.swift"

echo "==> Building the $compiled Swift examples of README.md in $out ($skipped for other platforms skipped)"
# GTK's pkg-config flags (-pthread, -msse...) are refused, with a warning, for a
# package that is a dependency, as ImagoGTK is here: the line says nothing about the
# examples and is left out; the build's status is kept.
set -o pipefail
"$swift" build --package-path "$out" -Xswiftc -warnings-as-errors 2>&1 | grep --line-buffered -v '^warning: prohibited flag(s): '
