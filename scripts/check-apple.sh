#!/usr/bin/env bash
# Type-checks Imago's Apple-only code on Linux, once per Apple platform, against
# hand-written declarations of the SDK surface it uses (scripts/apple-check/SDK:
# CoreGraphics, ImageIO, QuartzCore, UIKit, AppKit, SwiftUI, each signature, actor
# isolation and availability as Apple's SDK declares it).
#
# No Apple SDK runs here and the Linux compiler has no Apple standard library, so the
# code is compiled for Linux with the platform conditions rewritten: every `os(X)` and
# `targetEnvironment(macCatalyst)` in an `#if` becomes a flag (IMAGO_OS_X) that each
# configuration sets as that platform would, and only the stub frameworks that exist
# on the platform are on the import path, so `canImport(UIKit)` is true on iOS, tvOS,
# visionOS and watchOS and false on macOS, `canImport(AppKit)` only on macOS. Every
# file of the Imago and ImagoUI modules is compiled (the Linux-only ones drop out as
# on an Apple build), then the README's Apple example against the two modules.
#
# The declarations themselves are proven against a real SDK first (scripts/apple-check/
# checker, run on ../shared/apple-sdk/iPhoneOS16.5.sdk): each one that names an iOS API
# must exist there with the same Swift name, types, nullability, main-actor isolation,
# Sendable conformance and availability; what that SDK cannot show is listed with its
# Apple documentation page in scripts/apple-check/unconfirmed.txt. A planted declaration
# of a symbol that does not exist must make the checker fail. Without the SDK the
# check is skipped with a message, unless CI is set, where it fails.
#
# Usage: scripts/check-apple.sh [platform...]   (default: iOS macOS tvOS visionOS watchOS)
set -eu
cd "$(dirname "$0")/.."
root="$(pwd)"
swiftc="${SWIFTC:-$(dirname "$(command -v "${SWIFT:-swift}")")/swiftc}"
out="$root/.build/apple-check"
sdk="$root/scripts/apple-check/SDK"
platforms="${*:-iOS macOS tvOS visionOS watchOS}"
mkdir -p "$out"
rm -f "$out"/*.log "$out"/*.status

# The frameworks each platform's SDK has, in dependency order.
frameworks() {
  case "$1" in
    iOS|tvOS|visionOS) echo CoreGraphics ImageIO QuartzCore UIKit SwiftUI ;;
    macOS) echo CoreGraphics ImageIO QuartzCore AppKit SwiftUI ;;
    watchOS) echo CoreGraphics ImageIO UIKit SwiftUI ;;
    *) echo "unknown platform $1" >&2; exit 2 ;;
  esac
}

# `os(X)` and `targetEnvironment(...)` in compiler conditions become flags; every
# other line is kept, so that messages point at the file's own lines.
rewrite() {
  sed -E '/^[[:space:]]*#(if|elseif)/ { s/\bos\(([A-Za-z]+)\)/IMAGO_OS_\1/g; s/\btargetEnvironment\(([A-Za-z]+)\)/IMAGO_TARGET_\1/g; }' "$1"
}

check() {
  local platform="$1" dir="$out/$1" readme="" flags=(-swift-version 6 -D "IMAGO_OS_$1" -warnings-as-errors)
  rm -rf "$dir"; mkdir -p "$dir/modules" "$dir/sdk" "$dir/readme"
  for framework in $(frameworks "$platform"); do
    rewrite "$sdk/$framework.swift" > "$dir/sdk/$framework.swift"
    "$swiftc" -parse-as-library -wmo -emit-module -module-name "$framework" -I "$dir/modules" "${flags[@]}" \
      -emit-module-path "$dir/modules/$framework.swiftmodule" "$dir/sdk/$framework.swift" || return 1
  done
  # Each module's files under their own names in a tree of the same shape, Imago
  # first: ImagoUI is compiled against it, and sees its `package` declarations as a
  # target of the same package does.
  local module
  for module in Imago ImagoUI; do
    (cd "Sources/$module" && find . -name '*.swift') | while read -r file; do
      mkdir -p "$(dirname "$dir/$module/$file")"
      rewrite "Sources/$module/$file" > "$dir/$module/$file"
    done
    find "$dir/$module" -name '*.swift' | sort > "$dir/$module.files"
    "$swiftc" -parse-as-library -wmo -emit-module -module-name "$module" -package-name imago -I "$dir/modules" "${flags[@]}" \
      -emit-module-path "$dir/modules/$module.swiftmodule" @"$dir/$module.files" 2>&1 | sed "s#$dir/$module/#Sources/$module/#g"
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  done
  # The README's Apple example, for the platforms its imports exist on.
  awk -v dir="$dir/readme" '/^```swift[ \t]*$/ { file = sprintf("%s/README-%05d.swift", dir, NR + 1); next }
       /^```/ { file = ""; next } file != "" { print > file }' README.md
  for block in "$dir"/readme/*.swift; do
    head -n 1 "$block" | grep -q '^// Apple platforms only' || rm "$block"
  done
  for block in "$dir"/readme/*.swift; do
    [ -e "$block" ] || continue
    local missing="" start=$((10#$(basename "$block" .swift | tr -dc 0-9)))
    for module in $(sed -nE 's/^import ([A-Za-z]+).*/\1/p' "$block"); do
      [ "$module" = Foundation ] || [ -e "$dir/modules/$module.swiftmodule" ] || missing="$module"
    done
    # UIKit on watchOS has no views, which is what the README's UIKit examples show.
    if [ "$platform" = watchOS ] && grep -q '^import UIKit' "$block"; then missing=UIKit; fi
    [ -z "$missing" ] || continue
    mkdir -p "$block.d"; cp "$block" "$block.d/main.swift"
    "$swiftc" -typecheck -I "$dir/modules" "${flags[@]}" "$block.d/main.swift" 2>&1 \
      | awk -v file="$block.d/main.swift:" -v start="$start" '{
          while ((i = index($0, file)) > 0) {
            rest = substr($0, i + length(file)); match(rest, /^[0-9]+/)
            $0 = substr($0, 1, i - 1) "README.md:" (start + substr(rest, 1, RLENGTH) - 1) substr(rest, RLENGTH + 1)
          }
          print }'
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    readme=" and README.md's example at line $start"
  done
  echo "    $platform: $(wc -l < "$dir/Imago.files") files of Imago and $(wc -l < "$dir/ImagoUI.files") of ImagoUI type-check${readme:-}"
}

# The SDK check, and the same check of a copy of the declarations with one planted
# that the SDK does not have, which must fail.
apple_sdk="${APPLE_SDK:-$root/../shared/apple-sdk/iPhoneOS16.5.sdk}"
check_sdk() {
  local checker="$out/check-sdk" sources=("$root"/scripts/apple-check/checker/*.swift)
  local minimum
  minimum="$(sed -nE 's/.*\.iOS\(\.v([0-9]+)(_([0-9]+))?\).*/\1.\3/p' Package.swift | sed 's/\.$/.0/')"
  # Built once, and again only when a source of it changes.
  if [ ! -x "$checker" ] || [ -n "$(find "${sources[@]}" -newer "$checker")" ]; then
    "$swiftc" -O -swift-version 6 -warnings-as-errors -module-name CheckSDK -o "$checker" "${sources[@]}" || return 1
  fi
  local clang
  clang="$(dirname "$swiftc")/clang"
  "$checker" "$apple_sdk" "$sdk" scripts/apple-check/unconfirmed.txt "$minimum" "$clang" || return 1
  local planted="$out/planted"
  rm -rf "$planted"; mkdir -p "$planted"; cp "$sdk"/*.swift "$planted/"
  printf '\nnonisolated(unsafe) public let kCGImagePropertyAVISLoopCount: CFString = "LoopCount"\n' >> "$planted/ImageIO.swift"
  if "$checker" "$apple_sdk" "$planted" scripts/apple-check/unconfirmed.txt "$minimum" "$clang" > "$out/planted.log" 2>&1; then
    echo "check-apple: the SDK check accepted a planted declaration of kCGImagePropertyAVISLoopCount, which the SDK does not have" >&2
    return 1
  fi
  grep -q 'kCGImagePropertyAVISLoopCount: no C global' "$out/planted.log" || { cat "$out/planted.log"; return 1; }
  echo "    SDK check: a planted declaration of kCGImagePropertyAVISLoopCount is refused"
}
# Uses of APIs newer than the package's minimums, each under `#available` or in an
# `@available` declaration (scripts/apple-check/uses), and the same check of a planted
# unguarded use, which must fail. Needs no SDK: the declarations say what is newer.
check_uses() {
  local tool="$out/check-uses" minimums
  minimums="$(grep -oE '\.(macOS|iOS|tvOS|watchOS|visionOS)\(\.v[0-9_]+\)' Package.swift \
    | sed -E 's/\.([A-Za-z]+)\(\.v([0-9]+)_?([0-9]*)\)/\1=\2.\3/; s/\.$/.0/' | paste -sd, -)"
  if [ ! -x "$tool" ] || [ "scripts/apple-check/uses/main.swift" -nt "$tool" ]; then
    "$swiftc" -O -swift-version 6 -warnings-as-errors -module-name CheckUses -o "$tool" scripts/apple-check/uses/main.swift || return 1
  fi
  local sources
  sources="$(find Sources/Imago Sources/ImagoUI -name '*.swift' | sort)"
  # shellcheck disable=SC2086
  "$tool" "$minimums" "$sdk" $sources || return 1
  local planted="$out/planted-use.swift"
  printf 'import ImageIO\nlet key = kCGImagePropertyAVISDictionary\n' > "$planted"
  if "$tool" "$minimums" "$sdk" "$planted" > "$out/planted-use.log" 2>&1; then
    echo "check-apple: an unguarded use of kCGImagePropertyAVISDictionary (iOS 17) was accepted" >&2
    return 1
  fi
  echo "    Availability: a planted unguarded use of kCGImagePropertyAVISDictionary is refused"
}
(set +e; check_uses > "$out/uses.log" 2>&1; echo $? > "$out/uses.status") &

sdk_status=0
if [ -d "$apple_sdk" ]; then
  (set +e; check_sdk > "$out/sdk.log" 2>&1; echo $? > "$out/sdk.status") &
elif [ -n "${CI:-}" ]; then
  echo "check-apple: no Apple SDK at $apple_sdk, which CI requires" >&2
  sdk_status=1
else
  echo "    SDK check skipped: no Apple SDK at $apple_sdk (required when CI is set)"
fi

# The platforms side by side, their messages in order.
for platform in $platforms; do
  # The status is written even when the check fails: under `set -e` a failing
  # command would end this subshell before the `echo`.
  (set +e; (set -e; check "$platform") > "$out/$platform.log" 2>&1; echo $? > "$out/$platform.status") &
done
wait
status=$sdk_status
if [ -e "$out/sdk.status" ]; then
  cat "$out/sdk.log"
  [ "$(cat "$out/sdk.status")" -eq 0 ] || { echo "check-apple: the SDK declarations disagree with the SDK" >&2; status=1; }
  rm -f "$out/sdk.status"
fi
cat "$out/uses.log"
[ "$(cat "$out/uses.status")" -eq 0 ] || { echo "check-apple: an API newer than the minimums is used unguarded" >&2; status=1; }
for platform in $platforms; do
  cat "$out/$platform.log"
  [ "$(cat "$out/$platform.status")" -eq 0 ] || { echo "check-apple: $platform does not type-check" >&2; status=1; }
done
exit $status
