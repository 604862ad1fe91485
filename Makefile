# Imago: every target installs what it needs first (Debian packages, only when
# missing) and says what it is doing.

SWIFT ?= swift
DEBIAN_PACKAGES := pkg-config libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libtiff-dev libavif-dev libheif-dev libjxl-dev librsvg2-2 libcurl4-openssl-dev libhiredis-dev liblcms2-dev
# Warnings are errors in every build the Makefile makes.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors
# The tool as a user would install it: Swift's own libraries linked in, so the process
# does not resolve Foundation's symbols at every start (15 ms instead of 28 for
# `imago --help`).
# The linker's one warning there is about Foundation's own archive (its use of mktemp),
# not about Imago, and is left out of the output; the build's status is kept.
# Linked by the toolchain's lld with relative relocations packed (DT_RELR) where the C
# library reads them (glibc 2.36 and later): the table every start reads and applies
# shrinks from 1.9 MB to 15 KB, and a process at rest by 1.5–2 MB.
# lld also lays out first the functions a start runs (scripts/startup-order.txt, made
# by `make startup-order`): scattered through 17 MB of code, each brought in the 64 KB
# around it; together, a process at rest is another 2.5–3 MB smaller. A name the
# file lists that a build lacks is passed over.
STARTUP_ORDER := scripts/startup-order.txt
RELR_FLAGS := $(shell v=$$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //'); \
	if [ -n "$$v" ] && printf '2.36\n%s\n' "$$v" | sort -V -C && [ -x "$$(dirname "$$(realpath "$$(command -v $(SWIFT))")")/ld.lld" ]; then \
	  echo -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	    -Xlinker --symbol-ordering-file=$(CURDIR)/$(STARTUP_ORDER) -Xlinker --no-warn-symbol-ordering; fi)
RELEASE_BUILD = { $(SWIFT) build $(1) -c release --static-swift-stdlib $(SWIFT_FLAGS) $(RELR_FLAGS) 2>&1; \
	echo $$? > .build/release-build.status; } | grep --line-buffered -v "the use of .mktemp. is dangerous"; \
	exit $$(cat .build/release-build.status)
# SwiftPM does not see the order file as an input: a binary older than it is removed,
# so that the build links it again.
RELINK_IF_REORDERED = if [ $(STARTUP_ORDER) -nt $(1) ]; then rm -f $(1); fi;
TOOL_BUILD = $(call RELINK_IF_REORDERED,.build/release/imago) $(call RELEASE_BUILD,--product imago)
# The benchmark program, a package of its own (Benchmarks/), built as the tool is, so
# that its memory figures are the tool's.
BENCH_BUILD = $(call RELINK_IF_REORDERED,$(BENCH)) $(call RELEASE_BUILD,--package-path Benchmarks --product imago-bench)
BENCH = Benchmarks/.build/release/imago-bench
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := JPEG PNG GIF WebP BMP ICO TIFF AVIF HEIF JXL SVG HTTPHeaders DiskRecord
CORPUS ?= ../shared/corpus
BENCH_DIR := .build/bench
BENCH_RUNS ?= 5
# The GTK 4 view lives in a package of its own, so the core never needs GTK; its
# tests open real windows, on an X server in memory when there is no display.
GTK_DIR := Integrations/GTK
GTK_PACKAGES := libgtk-4-dev xvfb xauth
# Programs the tests run, beyond Debian's essential packages, the Swift toolchain and
# Imago's own executables: scripts/check-test-programs.sh holds every test to the
# packages `make test` installs, so the suite passes on a fresh machine.
# Colour management is checked against Pillow's ImageCms (Little CMS) with colord's
# profiles (Adobe RGB, ProPhoto, sRGB); AVIF and HEIF ones by avifenc and heif-enc;
# SVG against rsvg-convert, JPEG XL against djxl and cjxl.
TEST_PACKAGES := mount redis-server redis-tools librsvg2-bin libjxl-tools python3-minimal python3-pil colord-data libavif-bin libheif-examples
# The tests start their own Redis servers on free loopback ports; the system service
# Debian's redis-server starts on installation is stopped and disabled, so nothing
# listens on 6379 for them to meet by accident.
STOP_REDIS_SERVICE = if command -v systemctl >/dev/null && systemctl is-enabled --quiet redis-server 2>/dev/null; then \
	  echo "==> Stopping and disabling the redis-server service (the tests start their own servers)"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; $$sudo systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
# No display: Xvfb. GTK's Cairo renderer draws the same pixels on every machine.
GTK_RUN = if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then env GSK_RENDERER=cairo $(1); \
	else xvfb-run -a env GSK_RENDERER=cairo $(1); fi

# The toolchain's own docc, beside swift: no SwiftPM plugin to fetch.
DOCC ?= $(dir $(realpath $(shell command -v $(SWIFT))))docc
DOCS_BUILD := .build/docs-build

.PHONY: all deps build test check-apple docs demo gallery bench-gallery fuzz bench bench-redis sanitize soak clean startup-order

all: build

deps:
	@missing=""; \
	for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "==> Installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	@echo "==> Building Imago"
	@$(SWIFT) build $(SWIFT_FLAGS)

test: DEBIAN_PACKAGES += $(GTK_PACKAGES) $(TEST_PACKAGES)
test: deps
	@$(STOP_REDIS_SERVICE)
	@echo "==> Checking that the tests run only programs of the packages make test installs"
	@SWIFT=$(SWIFT) scripts/check-test-programs.sh $(DEBIAN_PACKAGES)
	@echo "==> Checking that each folder of Sources/Imago refers only to the root and the folders below it"
	@scripts/check-layers.sh
	@echo "==> Building Imago and its tests (warnings are errors)"
	@$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@echo "==> Running the tests"
	@scripts/run-tests.sh $(SWIFT)
	@echo "==> Compiling every Swift example in README.md, in a package made from its Package.swift"
	@SWIFT=$(SWIFT) scripts/check-readme-examples.sh
	@$(MAKE) --no-print-directory check-apple
	@echo "==> Building the GTK 4 view and its tests (release: one test times frames of optimised code)"
	@cd $(GTK_DIR) && $(SWIFT) build -c release --build-tests $(SWIFT_FLAGS)
	@echo "==> Running the GTK tests in real windows$$([ -n "$$DISPLAY$$WAYLAND_DISPLAY" ] || echo ' (under xvfb-run: no display)')"
	@# A grid made with the library's defaults writes to DiskCache.shared: a folder of the
	@# build's own, not the user's cache directory.
	@rm -rf $(CURDIR)/.build/gtk-test-cache
	@cd $(GTK_DIR) && $(call GTK_RUN,env XDG_CACHE_HOME=$(CURDIR)/.build/gtk-test-cache $(SWIFT) test -c release --skip-build --disable-xctest)

# The Apple-only code (UIKit, AppKit, SwiftUI, ImageIO) type-checked for iOS, macOS,
# tvOS, visionOS and watchOS against declarations of the SDK surface it uses
# (scripts/apple-check/SDK), after proving those declarations against the iOS 16.5 SDK
# in ../shared/apple-sdk (skipped without it, failing when CI is set). Part of `make test`.
check-apple:
	@echo "==> Type-checking the Apple-only code for iOS, macOS, tvOS, visionOS and watchOS against the SDK declarations in scripts/apple-check"
	@SWIFT=$(SWIFT) scripts/check-apple.sh

# The DocC documentation of the two library modules (Sources/Imago/Imago.docc,
# Sources/ImagoUI/ImagoUI.docc and every doc comment) into .build/docs/Imago and
# .build/docs/ImagoUI, static sites. The symbol graphs come from a build of its own,
# so the compiler flag that emits them never invalidates the everyday build; each
# catalog is converted with its own module's graphs only.
docs: deps
	@echo "==> Building the symbol graphs of Imago and ImagoUI"
	@# An up-to-date build writes no graphs: they are kept from the build that compiled,
	@# and when they are missing all the same, the build starts over.
	@for attempt in 1 2; do \
	  mkdir -p $(DOCS_BUILD)/symbol-graphs; \
	  $(SWIFT) build --scratch-path $(DOCS_BUILD) --target ImagoUI $(SWIFT_FLAGS) \
	    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/$(DOCS_BUILD)/symbol-graphs || exit 1; \
	  [ -f $(DOCS_BUILD)/symbol-graphs/Imago.symbols.json ] && [ -f $(DOCS_BUILD)/symbol-graphs/ImagoUI.symbols.json ] && break; \
	  rm -rf $(DOCS_BUILD); \
	done
	@rm -rf .build/docs; mkdir -p .build/docs
	@for module in Imago ImagoUI; do \
	  echo "==> Converting Sources/$$module/$$module.docc with $(DOCC)"; \
	  graphs=$(DOCS_BUILD)/module-graphs/$$module; rm -rf $$graphs; mkdir -p $$graphs; \
	  cp $(DOCS_BUILD)/symbol-graphs/$$module.symbols.json $(DOCS_BUILD)/symbol-graphs/$$module@*.symbols.json $$graphs/ 2>/dev/null; \
	  $(DOCC) convert Sources/$$module/$$module.docc --additional-symbol-graph-dir $$graphs \
	    --fallback-display-name $$module --fallback-bundle-identifier imago.$$module \
	    --transform-for-static-hosting --output-dir .build/docs/$$module --warnings-as-errors || exit 1; \
	done
	@echo "==> The documentation: $(CURDIR)/.build/docs/Imago/index.html (documentation/imago) and $(CURDIR)/.build/docs/ImagoUI/index.html (documentation/imagoui)"

# The thumbnail gallery over Samples/, served on 127.0.0.1; each image is listed six
# times under URLs of its own, so that there is a grid to scroll. Without a display it
# runs under Xvfb and saves a screenshot instead.
gallery: DEBIAN_PACKAGES += $(GTK_PACKAGES) python3
gallery: deps
	@echo "==> Building imago-gallery (release)"
	@cd $(GTK_DIR) && $(SWIFT) build -c release --product imago-gallery $(SWIFT_FLAGS)
	@mkdir -p .build/gallery; rm -f .build/gallery/port; set -e; \
	python3 scripts/serve.py Samples .build/gallery/port >/dev/null & server=$$!; trap "kill $$server" EXIT; \
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -s .build/gallery/port ] && break; sleep 0.2; done; \
	base="http://127.0.0.1:$$(head -n 1 .build/gallery/port)"; \
	urls=""; for n in 1 2 3 4 5 6; do for f in Samples/*.jpg Samples/*.png Samples/*.gif Samples/*.webp Samples/corrupt/*.png; do \
	  urls="$$urls $$base/$${f#Samples/}?copy=$$n"; done; done; \
	if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  echo "==> Opening the gallery over Samples/ served at $$base (close the window to stop)"; \
	  $(GTK_DIR)/.build/release/imago-gallery --size 160 $$urls; \
	else \
	  echo "==> No display: running the gallery under xvfb-run over Samples/ served at $$base, saving .build/gallery/gallery.png"; \
	  $(call GTK_RUN,$(GTK_DIR)/.build/release/imago-gallery --size 160 --screenshot .build/gallery/gallery.png $$urls) 2>&1 | grep -v 'session bus' || true; \
	fi

# The gallery's figures: first frame and first screen, frame gaps while scrolling
# end to end at 3,000 points a second, cells checked by their pixels, peak memory
# for 520 and 5,200 URLs, requests for missing images and on a warm relaunch, and
# thumbnails at GDK_SCALE=2, and 5,200 URLs with the grid's defaults (--library-defaults);
# under Xvfb with the Cairo renderer (scripts/bench-gallery.sh; BENCH_GALLERY_ONLY=NAME
# runs one case; BENCH_GALLERY_BUSY=1 runs one CPU-bound process beside each case).
bench-gallery: DEBIAN_PACKAGES += $(GTK_PACKAGES) python3 curl
bench-gallery: deps
	@echo "==> Building imago-gallery (release)"
	@cd $(GTK_DIR) && $(SWIFT) build -c release --product imago-gallery $(SWIFT_FLAGS)
	@python3 -c 'import PIL' 2>/dev/null || { echo "==> Installing Pillow (pip)"; python3 -m pip install --quiet pillow; }
	@scripts/bench-gallery.sh $(GTK_DIR)/.build/release/imago-gallery $(CORPUS) .build/bench-gallery

demo: deps
	@command -v python3 >/dev/null || { echo "==> Installing python3 (the demo's local web server)"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq python3 >/dev/null; }
	@echo "==> Building the imago tool (release)"
	@mkdir -p .build; $(TOOL_BUILD)
	@echo "==> Decoding the sample images in Samples/ and writing them as PNG to .build/demo/"
	@.build/release/imago decode --out-dir .build/demo Samples/*.jpg Samples/*.png Samples/*.gif Samples/*.webp
	@echo "==> A corrupt file gets one clear line and exit status 1:"
	@.build/release/imago decode Samples/corrupt/bad-crc.png; echo "    (exit status $$?)"
	@mkdir -p .build/demo; rm -rf .build/demo/cache .build/demo/port; set -e; \
	python3 scripts/serve.py Samples .build/demo/port >/dev/null & server=$$!; trap "kill $$server" EXIT; \
	for i in $$(seq 50); do [ -s .build/demo/port ] && break; sleep 0.1; done; \
	[ -s .build/demo/port ] || { echo "the demo's web server did not start"; exit 1; }; \
	base="http://127.0.0.1:$$(head -n 1 .build/demo/port)"; \
	urls=""; for f in Samples/*.jpg Samples/*.png Samples/*.gif Samples/*.webp; do urls="$$urls $$base/$${f#Samples/}"; done; \
	echo "==> A contact sheet of the same images loaded from a local web server ($$base):"; \
	echo "    each cell one load of a batch (ImageLoader.images(for:)), its image decoded to fit the cell; kept in .build/demo/cache"; \
	.build/release/imago sheet --cache-dir .build/demo/cache --size 192 --columns 4 -o .build/demo/sheet-cold.png $$urls; \
	echo "==> Again, as a new process: answered by the disk cache (the fitted images kept there, or the originals revalidated)"; \
	.build/release/imago sheet --cache-dir .build/demo/cache --size 192 --columns 4 -o .build/demo/sheet.png $$urls; \
	echo "==> The disk cache:"; \
	.build/release/imago cache stats --cache-dir .build/demo/cache; \
	echo "==> The contact sheet: $(CURDIR)/.build/demo/sheet.png"

# libFuzzer on each decoder for FUZZ_SECONDS, starting from the shared corpus and the
# test fixtures; what it finds lands in .build/fuzz/TARGET/crashes, and the run fails.
# Coverage is asked for explicitly: --sanitize=fuzzer alone was seen to leave the
# library's Swift code uninstrumented in some builds, and gold drops the counters of
# every module but the fuzz target's, so lld links. -keep_seed keeps starting inputs whose value
# lies inside the (uninstrumented) system codec libraries. Optimised (-O): unoptimised,
# instrumented code turned a legal 29 × 42769 TIFF's orientation pass into a 10 s timeout.
FUZZ_FLAGS := --sanitize=fuzzer --sanitize=address -Xswiftc -use-ld=lld -Xswiftc -O \
	-Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
	  echo "==> Building Fuzz$$t (libFuzzer + AddressSanitizer)"; \
	  dir=$(CURDIR)/.build/fuzz/$$t; mkdir -p $$dir/corpus $$dir/crashes; \
	  (cd Fuzz && $(SWIFT) build --scratch-path $(CURDIR)/.build/fuzz/build --product Fuzz$$t $(FUZZ_FLAGS)) || exit 1; \
	  case $$t in JPEG) ext=jpg;; PNG) ext=png;; GIF) ext=gif;; WebP) ext=webp;; BMP) ext=bmp;; ICO) ext=ico;; TIFF) ext=tif;; AVIF) ext=avif;; HEIF) ext=heic;; JXL) ext=jxl;; SVG) ext=svg;; *) ext=none;; esac; \
	  find $(CORPUS) Tests/ImagoTests/Fixtures -name "*.$$ext" -size -256k 2>/dev/null | while read f; do \
	    cp -f "$$f" "$$dir/corpus/$$(echo "$$f" | md5sum | cut -c1-16).$$ext"; done; \
	  [ ! -d Fuzz/Seeds/$$t ] || cp -f Fuzz/Seeds/$$t/* $$dir/corpus/; \
	  echo "==> Fuzzing Fuzz$$t for $(FUZZ_SECONDS) s ($$(ls $$dir/corpus | wc -l) starting inputs)"; \
	  SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=$(CURDIR)/Fuzz/lsan-suppressions.txt \
	  $(CURDIR)/.build/fuzz/build/debug/Fuzz$$t $$dir/corpus \
	    -max_total_time=$(FUZZ_SECONDS) -keep_seed=1 -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
	    -artifact_prefix=$$dir/crashes/ -print_final_stats=1 > $$dir/log 2>&1; \
	  status=$$?; grep -E 'INITED|^stat::(number_of_executed_units|peak_rss_mb)|^SUMMARY|^Done' $$dir/log; \
	  if [ $$status -ne 0 ]; then echo "Fuzz$$t found a problem: see $$dir/log and $$dir/crashes"; exit 1; fi; \
	done

# The photo sets of the benchmarks, made once from the shared corpus.
MAKE_PHOTOS = if [ ! -f $(BENCH_DIR)/photos/.complete ] || [ ! -f $(BENCH_DIR)/large/.complete ] || [ ! -f $(BENCH_DIR)/avif/.complete ]; then \
	  echo "==> Making the photo sets from $(CORPUS) into $(BENCH_DIR) (once)"; \
	  python3 Benchmarks/make_photos.py --corpus $(CORPUS) --out $(BENCH_DIR) || exit 1; \
	fi

# Regenerates $(STARTUP_ORDER) from nothing: eight rounds of linking the tool in the
# order found so far and recording (perf) which functions its runs first touch.
startup-order: DEBIAN_PACKAGES += linux-perf python3
startup-order: deps
	@echo "==> Recording the functions a start of the tool touches into $(STARTUP_ORDER)"
	@mkdir -p .build; : > $(STARTUP_ORDER); for round in 1 2 3 4 5 6 7 8; do \
	  ( $(TOOL_BUILD) ) >/dev/null || exit 1; \
	  python3 scripts/startup-order.py .build/release/imago $(STARTUP_ORDER) || exit 1; done; \
	( $(TOOL_BUILD) ) >/dev/null

# Imago against its baselines, side by side in one run: full decodes
# and 256 px thumbnails of 300 web-size photos on all cores against Pillow and
# libjpeg-turbo's TurboJPEG called from C, and peak memory of thumbnails of 4000 px
# photos; then `imago fetch` end to end over HTTP from nginx on 127.0.0.1 against
# Python aiohttp + Pillow and the limit (Benchmarks/e2e.py). The photos are made
# once from the shared corpus into $(BENCH_DIR).
bench: DEBIAN_PACKAGES += libturbojpeg0-dev gcc nginx-light curl colord-data
bench: deps
	@echo "==> Building the imago tool and the benchmark program (release)"
	@mkdir -p .build; $(TOOL_BUILD)
	@$(BENCH_BUILD)
	@python3 -c 'from PIL import features; assert features.check("avif")' 2>/dev/null || \
	  { echo "==> Installing Pillow with AVIF support (pip)"; python3 -m pip install --quiet --upgrade 'pillow>=11.3'; }
	@python3 -c 'import aiohttp' 2>/dev/null || { echo "==> Installing aiohttp (pip)"; python3 -m pip install --quiet aiohttp; }
	@echo "==> Compiling the libjpeg-turbo baseline (Benchmarks/tj_decode.c)"
	@mkdir -p $(BENCH_DIR)
	@gcc -O2 -o $(BENCH_DIR)/tj_decode Benchmarks/tj_decode.c -lturbojpeg -lpthread
	@$(MAKE_PHOTOS)
	@echo "==> Benchmarking: $(BENCH_RUNS) rounds of each measure, release build, all cores"
	@$(BENCH) --photos $(BENCH_DIR)/photos --large $(BENCH_DIR)/large --avif $(BENCH_DIR)/avif --runs $(BENCH_RUNS) \
	  --pillow Benchmarks/pillow_thumbnails.py --libjpeg $(BENCH_DIR)/tj_decode \
	  --profile /usr/share/color/icc/colord/AdobeRGB1998.icc
	@echo "==> End to end: imago fetch over HTTP from nginx on 127.0.0.1 against Python aiohttp + Pillow and the limit"
	@python3 Benchmarks/e2e.py --imago .build/release/imago --tj-decode $(BENCH_DIR)/tj_decode \
	  --photos $(BENCH_DIR)/photos --rounds $(BENCH_RUNS)
	@$(MAKE) --no-print-directory bench-redis

# The shared tier (Benchmarks/fleet.py): four imago fetch processes making 300
# thumbnails through one Redis against the same without it (origin requests), a new
# process answered by Redis against one cold from the origin, and the same with
# Redis hung; nginx and redis-server on 127.0.0.1. Part of `make bench`.
bench-redis: DEBIAN_PACKAGES += nginx-light redis-server redis-tools
bench-redis: deps
	@$(STOP_REDIS_SERVICE)
	@echo "==> Building the imago tool (release)"
	@mkdir -p .build; $(TOOL_BUILD)
	@python3 -c 'import PIL' 2>/dev/null || { echo "==> Installing Pillow (pip)"; python3 -m pip install --quiet pillow; }
	@$(MAKE_PHOTOS)
	@echo "==> The shared tier: a fleet of imago fetch processes on one Redis, against the same without it ($(BENCH_RUNS) rounds)"
	@python3 Benchmarks/fleet.py --imago .build/release/imago --photos $(BENCH_DIR)/photos --rounds $(BENCH_RUNS)

# 20,000 loads through the library against the test server: faults in one response
# in ten, cancellations, priority changes, targets that go away; every load must end
# once with its own image, the disk cache must verify record by record, and memory
# must come back within 10 % of its baseline. Then 20,000 distinct URLs through
# `imago fetch` with a disk cache: one record per input line, each image its own
# URL's, and the same peak memory as for 2,000 URLs. Not part of `make test`.
soak: deps
	@echo "==> Building the tests"
	@$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@echo "==> Soaking: 20,000 loads through the library, then 20,000 URLs through imago fetch, against the fault-injecting test server"
	@IMAGO_SOAK=1 $(SWIFT) test --skip-build --disable-xctest --filter 'ImagoUITests.SoakTests/'
	@# A run of its own: in one process with the library soak, the tool soak's server
	@# and its 2,000 images would count in the library's memory figures.
	@IMAGO_SOAK=1 $(SWIFT) test --skip-build --disable-xctest --filter 'ImagoToolTests.ToolSoakTests/'

# The caches, the pipeline, the loader and the views under the thread sanitizer, then
# the whole suite under the address sanitizer, each in a build folder of its own (not
# part of `make test`: a sanitized build doubles the test time). LeakSanitizer is off:
# it cannot see pointers Swift keeps with spare bits set (enum payloads such as Data's
# storage, the side tables of weakly referenced objects), so it reports live memory
# as leaked; `make soak` checks that memory comes back instead.
# Under a sanitizer code runs several times slower: four test cases at once (not the
# suite's eight) keep the loads of each within their hang guards on two cores.
SANITIZER_WIDTH = --experimental-maximum-parallelization-width 4
sanitize: deps
	@echo "==> Testing the caches, the loaders, previews, animations and the views under the thread sanitizer"
	@$(SWIFT) test --scratch-path .build/tsan --sanitize=thread --disable-xctest $(SANITIZER_WIDTH) \
		--filter 'ImageCacheTests|MemoryPressure|DiskCacheTests|VaryTests|ImageLoaderTests|ImagePrefetcherTests|LoaderCachingTests|Pipeline|ImageTargetLoaderTests|ImageDisplayingTests|ImageViewServerTests|DataLoading|CurlDataLoader|Partial|Preview|Animation|LookUpRace'
	@echo "==> Testing everything under the address sanitizer"
	@IMAGO_SANITIZER=address ASAN_OPTIONS=detect_leaks=0 \
		$(SWIFT) test --scratch-path .build/asan --sanitize=address --disable-xctest $(SANITIZER_WIDTH)

clean:
	@$(SWIFT) package clean
	@rm -rf .build/demo .build/fuzz .build/gallery Fuzz/.build Benchmarks/.build $(GTK_DIR)/.build
