"""Generate text for one or more prompts with a model package and print it.

    python model-generate.py -m PACKAGE_DIR [-p PROMPT ...] [--max_length N] [--do_sample]

The same script runs on onnxruntime-genai: only the import line differs."""
import argparse
import time

import onnx_genai as og


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", required=True, help="package folder (genai_config.json)")
    ap.add_argument("-p", "--prompts", nargs="+", default=["Once upon a time", "The little dog"])
    ap.add_argument("--max_length", type=int, default=64)
    ap.add_argument("--do_sample", action="store_true")
    ap.add_argument("--top_k", type=int, default=50)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timings", action="store_true")
    args = ap.parse_args()

    config = og.Config(args.model)
    config.clear_providers()  # run on the CPU
    model = og.Model(config)
    tokenizer = og.Tokenizer(model)

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=args.max_length, batch_size=len(args.prompts),
                              do_sample=args.do_sample, top_k=args.top_k,
                              temperature=args.temperature, random_seed=args.seed)
    generator = og.Generator(model, params)
    start = time.time()
    generator.append_tokens(tokenizer.encode_batch(args.prompts))
    steps = 0
    while not generator.is_done():
        generator.generate_next_token()
        steps += 1
    elapsed = time.time() - start

    for i, prompt in enumerate(args.prompts):
        print(f"[{i}] {prompt!r} -> {tokenizer.decode(generator.get_sequence(i))!r}")
    if args.timings:
        print(f"{steps} steps for {len(args.prompts)} prompts in {elapsed:.3f} s")


if __name__ == "__main__":
    main()
