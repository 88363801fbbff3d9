# Two entry points for a fresh machine: `make demo` and `make test`. Both install what
# they need first (tools/install_deps.sh), then build with CMake.
JOBS ?= $(shell nproc)
BUILD ?= build
SHARED ?= ../shared
STORIES := $(BUILD)/stories260K
LLAMA2C := $(SHARED)/models/llama2c

.PHONY: deps build demo test test-sanitize fuzz-smoke clean

deps:
	bash tools/install_deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

# The demo: turn llama2.c's stories260K into an onnxruntime-genai package (builder
# layout: GroupQueryAttention, SkipSimplifiedLayerNormalization, ...) and stream a story.
$(STORIES)/genai_config.json: tools/make_model.py | build
	python3 tools/make_model.py --from-llama2c $(LLAMA2C)/stories260K.bin \
		--tokenizer $(LLAMA2C)/tok512.bin --dtype fp32 --out $(STORIES)

demo: build $(STORIES)/genai_config.json
	./$(BUILD)/onnx-genai generate -m $(STORIES) -p "Once upon a time" --max-length 200

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (clang).
test-sanitize: deps
	CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_SANITIZE=ON -DOG_NATIVE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS)

# libFuzzer on the loader, the chat-template parser/renderer, genai_config.json,
# tokenizer.json, the guidance compilers (JSON Schema, regex, Lark), convert's GGUF reader, the
# .onnx_adapter reader, the WAV reader and the image decoders, bounded, from the seed corpora
# (the chat-template corpus in ../shared seeds the second when present).
FUZZ_SECONDS ?= 60
FUZZ_CHAT_SECONDS ?= 30
FUZZ_JSON_SECONDS ?= 15
FUZZ_GUIDE_SECONDS ?= 15
FUZZ_GGUF_SECONDS ?= 5
FUZZ_ADAPTER_SECONDS ?= 5
FUZZ_IMAGE_SECONDS ?= 10
FUZZ_WAV_SECONDS ?= 5
CHAT_SEEDS := $(wildcard $(SHARED)/chat-templates/templates)
# One bounded run of fuzz_$(1) for $(2) seconds on inputs up to $(3) bytes, seeded from
# fuzz/corpus/$(1); a crash or an input slower than 10 s is kept as build-fuzz/$(1)-*.
fuzz_run = mkdir -p build-fuzz/corpus-$(1) && ./build-fuzz/fuzz/fuzz_$(1) \
	-max_total_time=$(2) -rss_limit_mb=2048 -max_len=$(3) -timeout=10 \
	-artifact_prefix=build-fuzz/$(1)- build-fuzz/corpus-$(1) fuzz/corpus/$(1)
fuzz-smoke: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DOG_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_loader fuzz_chat_template \
		fuzz_genai_config fuzz_tokenizer fuzz_guide fuzz_gguf fuzz_adapter fuzz_wav fuzz_image
	mkdir -p build-fuzz/corpus && ./build-fuzz/fuzz/fuzz_loader -max_total_time=$(FUZZ_SECONDS) \
		-rss_limit_mb=4096 build-fuzz/corpus fuzz/corpus/loader
	mkdir -p build-fuzz/corpus-chat && ./build-fuzz/fuzz/fuzz_chat_template \
		-max_total_time=$(FUZZ_CHAT_SECONDS) -rss_limit_mb=2048 -max_len=8192 \
		build-fuzz/corpus-chat fuzz/corpus/chat_template $(CHAT_SEEDS)
	$(call fuzz_run,genai_config,$(FUZZ_JSON_SECONDS),65536)
	$(call fuzz_run,tokenizer,$(FUZZ_JSON_SECONDS),65536)
	$(call fuzz_run,guide,$(FUZZ_GUIDE_SECONDS),4096)
	$(call fuzz_run,gguf,$(FUZZ_GGUF_SECONDS),16384)
	$(call fuzz_run,adapter,$(FUZZ_ADAPTER_SECONDS),4096)
	$(call fuzz_run,wav,$(FUZZ_WAV_SECONDS),4096)
	$(call fuzz_run,image,$(FUZZ_IMAGE_SECONDS),8192)

clean:
	rm -rf build build-asan build-fuzz
