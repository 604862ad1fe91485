# Imago: every target installs what it needs first (Debian packages, only when
# missing) and says what it is doing.

SWIFT ?= swift
DEBIAN_PACKAGES := pkg-config libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libtiff-dev libavif-dev libheif-dev
# Warnings are errors in every build the Makefile makes.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := JPEG PNG GIF WebP BMP ICO TIFF AVIF HEIF
CORPUS ?= ../shared/corpus
BENCH_DIR := .build/bench
BENCH_RUNS ?= 5

.PHONY: all deps build test demo fuzz bench sanitize clean

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

test: deps
	@echo "==> Building Imago and its tests (warnings are errors)"
	@$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@echo "==> Running the tests"
	@$(SWIFT) test --skip-build

demo: deps
	@command -v python3 >/dev/null || { echo "==> Installing python3 (the demo's local web server)"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq python3 >/dev/null; }
	@echo "==> Building the imago tool (release)"
	@$(SWIFT) build -c release --product imago $(SWIFT_FLAGS)
	@echo "==> Decoding the sample images in Samples/ and writing them as PNG to .build/demo/"
	@.build/release/imago decode --out-dir .build/demo Samples/*.jpg Samples/*.png Samples/*.gif Samples/*.webp
	@echo "==> A corrupt file gets one clear line and exit status 1:"
	@.build/release/imago decode Samples/corrupt/bad-crc.png; echo "    (exit status $$?)"
	@rm -rf .build/demo/cache; set -e; \
	python3 scripts/serve.py Samples > .build/demo/port & server=$$!; trap "kill $$server" EXIT; \
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -s .build/demo/port ] && break; sleep 0.2; done; \
	base="http://127.0.0.1:$$(head -n 1 .build/demo/port)"; \
	urls=""; for f in Samples/*.jpg Samples/*.png Samples/*.gif Samples/*.webp; do urls="$$urls $$base/$${f#Samples/}"; done; \
	echo "==> Loading the same images from a local web server ($$base) as 128 px thumbnails, each asked for twice:"; \
	echo "    one transfer per image (the second request joins the first), kept in .build/demo/cache"; \
	.build/release/imago fetch --cache-dir .build/demo/cache --thumbnail 128 $$urls $$urls; \
	echo "==> Again, as a new process: answered by the disk cache (still fresh, or revalidated with a bodiless 304)"; \
	.build/release/imago fetch --cache-dir .build/demo/cache --thumbnail 128 $$urls; \
	echo "==> The disk cache:"; \
	.build/release/imago cache stats --cache-dir .build/demo/cache

# libFuzzer on each decoder for FUZZ_SECONDS, starting from the shared corpus and the
# test fixtures; what it finds lands in .build/fuzz/TARGET/crashes, and the run fails.
# Coverage is asked for explicitly: --sanitize=fuzzer alone was seen to leave the
# library's Swift code uninstrumented in some builds, and gold drops the counters of
# every module but the fuzz target's, so lld links. -keep_seed keeps starting inputs whose value
# lies inside the (uninstrumented) system codec libraries.
FUZZ_FLAGS := --sanitize=fuzzer --sanitize=address -Xswiftc -use-ld=lld \
	-Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
	  echo "==> Building Fuzz$$t (libFuzzer + AddressSanitizer)"; \
	  dir=$(CURDIR)/.build/fuzz/$$t; mkdir -p $$dir/corpus $$dir/crashes; \
	  (cd Fuzz && $(SWIFT) build --scratch-path $$dir/build --product Fuzz$$t $(FUZZ_FLAGS)) || exit 1; \
	  case $$t in JPEG) ext=jpg;; PNG) ext=png;; GIF) ext=gif;; WebP) ext=webp;; BMP) ext=bmp;; ICO) ext=ico;; TIFF) ext=tif;; AVIF) ext=avif;; HEIF) ext=heic;; esac; \
	  find $(CORPUS) Tests/ImagoTests/Fixtures -name "*.$$ext" -size -256k 2>/dev/null | while read f; do \
	    cp -f "$$f" "$$dir/corpus/$$(echo "$$f" | md5sum | cut -c1-16).$$ext"; done; \
	  echo "==> Fuzzing Fuzz$$t for $(FUZZ_SECONDS) s ($$(ls $$dir/corpus | wc -l) starting inputs)"; \
	  SWIFT_BACKTRACE=enable=no $$dir/build/debug/Fuzz$$t $$dir/corpus \
	    -max_total_time=$(FUZZ_SECONDS) -keep_seed=1 -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
	    -artifact_prefix=$$dir/crashes/ -print_final_stats=1 > $$dir/log 2>&1; \
	  status=$$?; grep -E 'INITED|^stat::(number_of_executed_units|peak_rss_mb)|^SUMMARY|^Done' $$dir/log; \
	  if [ $$status -ne 0 ]; then echo "Fuzz$$t found a problem: see $$dir/log and $$dir/crashes"; exit 1; fi; \
	done

# Imago against its baselines, side by side in one run: full decodes
# and 256 px thumbnails of 300 web-size photos on all cores against Pillow and
# libjpeg-turbo's TurboJPEG called from C, and peak memory of thumbnails of 4000 px
# photos. The photos are made once from the shared corpus into $(BENCH_DIR).
bench: DEBIAN_PACKAGES += libturbojpeg0-dev gcc
bench: deps
	@echo "==> Building the imago tool (release)"
	@$(SWIFT) build -c release --product imago $(SWIFT_FLAGS)
	@python3 -c 'import PIL' 2>/dev/null || { echo "==> Installing Pillow (pip)"; python3 -m pip install --quiet pillow; }
	@echo "==> Compiling the libjpeg-turbo baseline (Benchmarks/tj_decode.c)"
	@mkdir -p $(BENCH_DIR)
	@gcc -O2 -o $(BENCH_DIR)/tj_decode Benchmarks/tj_decode.c -lturbojpeg -lpthread
	@if [ ! -f $(BENCH_DIR)/photos/.complete ] || [ ! -f $(BENCH_DIR)/large/.complete ]; then \
	  echo "==> Making the photo sets from $(CORPUS) into $(BENCH_DIR) (once)"; \
	  python3 Benchmarks/make_photos.py --corpus $(CORPUS) --out $(BENCH_DIR) || exit 1; \
	fi
	@echo "==> Benchmarking: $(BENCH_RUNS) rounds of each measure, release build, all cores"
	@.build/release/imago bench --photos $(BENCH_DIR)/photos --large $(BENCH_DIR)/large --runs $(BENCH_RUNS) \
	  --pillow Benchmarks/pillow_thumbnails.py --libjpeg $(BENCH_DIR)/tj_decode

# The caches, the pipeline and the loader under the thread sanitizer, in a build folder of their own
# (not part of `make test`: a sanitized build doubles the test time).
sanitize: deps
	@echo "==> Testing the caches and the loader under the thread sanitizer"
	@$(SWIFT) test --scratch-path .build/tsan --sanitize=thread \
		--filter 'ImageCacheTests|MemoryPressure|DiskCacheTests|ImageLoaderTests|ImagePrefetcherTests|LoaderCachingTests|Pipeline|ImageTargetLoaderTests|ImageDisplayingTests'

clean:
	@$(SWIFT) package clean
	@rm -rf .build/demo .build/fuzz Fuzz/.build
