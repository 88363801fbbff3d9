"""A chat loop with streaming output: each turn is rendered with the package's chat
template (or --template), the new tokens are appended to the same generator (the
conversation stays in its KV cache), and the answer is printed as it is generated.

    python model-chat.py -m PACKAGE_DIR [--system TEXT] [--max_new_tokens N]
    echo "Hi" | python model-chat.py -m PACKAGE_DIR --template FILE.jinja

Reads one prompt per line from standard input; an empty line or EOF ends the chat.
The same script runs on onnxruntime-genai: only the import line differs."""
import argparse
import json
import sys

import onnx_genai as og


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", required=True, help="package folder (genai_config.json)")
    ap.add_argument("--system", default="You are a helpful assistant.")
    ap.add_argument("--template", help="a chat template file to use instead of the package's")
    ap.add_argument("--max_length", type=int, default=512)
    ap.add_argument("--max_new_tokens", type=int, default=64)
    args = ap.parse_args()

    model = og.Model(args.model)
    tokenizer = og.Tokenizer(model)
    template = open(args.template, encoding="utf-8").read() if args.template else None

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=args.max_length)
    generator = og.Generator(model, params)

    messages = [{"role": "system", "content": args.system}] if args.system else []
    rendered = ""  # what the generator holds, as text
    for line in sys.stdin:
        text = line.rstrip("\n")
        if not text:
            break
        messages.append({"role": "user", "content": text})
        prompt = tokenizer.apply_chat_template(json.dumps(messages), template_str=template,
                                               add_generation_prompt=True)
        # only what this turn adds goes to the model; the rest is in its cache
        new_text = prompt[len(rendered):] if prompt.startswith(rendered) else prompt
        if not prompt.startswith(rendered):
            generator.rewind_to(0)
        generator.append_tokens(tokenizer.encode(new_text))
        stream = tokenizer.create_stream()
        answer, produced = [], 0
        print("assistant: ", end="", flush=True)
        while not generator.is_done() and produced < args.max_new_tokens:
            generator.generate_next_token()
            piece = stream.decode(generator.get_next_tokens()[0])
            answer.append(piece)
            produced += 1
            print(piece, end="", flush=True)
        print()
        messages.append({"role": "assistant", "content": "".join(answer)})
        rendered = prompt + "".join(answer)
        if generator.is_done():
            break


if __name__ == "__main__":
    main()
