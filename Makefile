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
# tokenizer.json, the guidance compilers (JSON Schema, regex, Lark), convert's GGUF reader and the
# .onnx_adapter reader, bounded, from the seed corpora (the chat-template corpus in ../shared
# seeds the second when present).
FUZZ_SECONDS ?= 60
FUZZ_CHAT_SECONDS ?= 30
FUZZ_JSON_SECONDS ?= 15
FUZZ_GUIDE_SECONDS ?= 15
FUZZ_GGUF_SECONDS ?= 5
FUZZ_ADAPTER_SECONDS ?= 5
FUZZ_IMAGE_SECONDS ?= 10
FUZZ_WAV_SECONDS ?= 5
CHAT_SEEDS := $(wildcard $(SHARED)/chat-templates/templates)
fuzz-smoke: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DOG_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_loader fuzz_chat_template \
		fuzz_genai_config fuzz_tokenizer fuzz_guide fuzz_gguf fuzz_adapter fuzz_wav
	cmake --build build-fuzz -j $(JOBS) --target fuzz_image
	mkdir -p build-fuzz/corpus && ./build-fuzz/fuzz/fuzz_loader -max_total_time=$(FUZZ_SECONDS) \
		-rss_limit_mb=4096 build-fuzz/corpus fuzz/corpus/loader
	mkdir -p build-fuzz/corpus-chat && ./build-fuzz/fuzz/fuzz_chat_template \
		-max_total_time=$(FUZZ_CHAT_SECONDS) -rss_limit_mb=2048 -max_len=8192 \
		build-fuzz/corpus-chat fuzz/corpus/chat_template $(CHAT_SEEDS)
	for t in genai_config tokenizer; do mkdir -p build-fuzz/corpus-$$t && \
		./build-fuzz/fuzz/fuzz_$$t -max_total_time=$(FUZZ_JSON_SECONDS) -rss_limit_mb=2048 \
		-max_len=65536 -timeout=10 -artifact_prefix=build-fuzz/$$t- \
		build-fuzz/corpus-$$t fuzz/corpus/$$t || exit 1; done
	mkdir -p build-fuzz/corpus-guide && ./build-fuzz/fuzz/fuzz_guide \
		-max_total_time=$(FUZZ_GUIDE_SECONDS) -rss_limit_mb=2048 -max_len=4096 -timeout=10 \
		-artifact_prefix=build-fuzz/guide- build-fuzz/corpus-guide fuzz/corpus/guide
	mkdir -p build-fuzz/corpus-gguf && ./build-fuzz/fuzz/fuzz_gguf \
		-max_total_time=$(FUZZ_GGUF_SECONDS) -rss_limit_mb=2048 -max_len=16384 -timeout=10 \
		-artifact_prefix=build-fuzz/gguf- build-fuzz/corpus-gguf fuzz/corpus/gguf
	mkdir -p build-fuzz/corpus-adapter && ./build-fuzz/fuzz/fuzz_adapter \
		-max_total_time=$(FUZZ_ADAPTER_SECONDS) -rss_limit_mb=2048 -max_len=4096 -timeout=10 \
		-artifact_prefix=build-fuzz/adapter- build-fuzz/corpus-adapter fuzz/corpus/adapter
	mkdir -p build-fuzz/corpus-wav && ./build-fuzz/fuzz/fuzz_wav \
		-max_total_time=$(FUZZ_WAV_SECONDS) -rss_limit_mb=2048 -max_len=4096 -timeout=10 \
		-artifact_prefix=build-fuzz/wav- build-fuzz/corpus-wav fuzz/corpus/wav
	mkdir -p build-fuzz/corpus-image && ./build-fuzz/fuzz/fuzz_image \
		-max_total_time=$(FUZZ_IMAGE_SECONDS) -rss_limit_mb=2048 -max_len=8192 -timeout=10 \
		-artifact_prefix=build-fuzz/image- build-fuzz/corpus-image fuzz/corpus/image

clean:
	rm -rf build build-asan build-fuzz
